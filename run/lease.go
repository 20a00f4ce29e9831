package run

import (
	"context"
	"errors"
	"time"

	"github.com/bobnet/bobnet/board"
)

// hold renews job's lease every third of it while the runner works, so a
// slow model keeps its card and only a replica that stopped loses it.
// The returned context ends when the card was lost (taken over or its
// run ended); release stops the renewing and must be called.
func (w *Worker) hold(ctx context.Context, job board.RunJob) (held context.Context, release func()) {
	held, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(w.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-held.Done():
				return
			case <-t.C:
			}
			err := w.store.RenewRunCard(held, job, w.cfg.Lease)
			switch {
			case errors.Is(err, board.ErrNotRunnable):
				w.logger.Info("run card lost while worked", "card", job.Card.Handle, "run", job.Run.ID)
				cancel()
				return
			case err != nil && held.Err() == nil:
				// Postgres away for a moment: the lease has two more
				// thirds to go, and the next renewal may reach it.
				w.logger.Warn("renew run card", "card", job.Card.Handle, "run", job.Run.ID, "err", err)
			}
		}
	}()
	return held, func() { cancel(); <-done }
}
