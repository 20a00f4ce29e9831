package bot

import (
	"context"
	"time"

	"github.com/bobnet/bobnet/board"
)

// sweep expires proposals whose time is up, and sends the reminders that
// are due, every SweepInterval.
func (e *Engine) sweep(ctx context.Context) {
	t := time.NewTicker(e.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.remindDue(ctx) // remind.go
		ids, err := e.deps.Proposals.DueExpiries(ctx, e.deps.Now(), 100)
		if err != nil {
			e.logger.Warn("find expired proposals", "err", err)
			continue
		}
		for _, id := range ids {
			e.expire(ctx, id)
		}
	}
}

func (e *Engine) expire(ctx context.Context, id board.ProposalID) {
	held, err := e.claim(ctx, id, "expire", "")
	if err != nil || held == nil {
		if err == nil {
			// Decided (or being decided): not ours to expire.
			_ = e.deps.Proposals.RemoveExpiry(ctx, id)
		}
		return
	}
	defer held.end()
	p, err := e.deps.Proposals.Proposal(ctx, id)
	if err != nil || p.State != board.ProposalPending {
		_ = e.deps.Proposals.RemoveExpiry(ctx, id)
		return
	}
	if _, err := e.finish(ctx, held, p, board.ProposalExpired, "", "expired"); err != nil {
		e.logger.Warn("expire proposal", "proposal", id, "err", err)
		return
	}
	_ = e.deps.Proposals.RemoveExpiry(ctx, id)
}
