package matrix

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"maunium.net/go/mautrix/id"
)

// editEvery is how often one notice is edited at most: a draft as its
// cards come, a run's progress as its cards move. Homeservers rate-limit
// senders, and people's clients redraw the message on every edit.
const editEvery = time.Second

// pacer edits each notice at most once per interval. An update that comes
// sooner waits for the rest of the interval, replaced by any later one,
// so the last state is always shown; a final update (the answer, a run's
// end) goes at once and drops what was waiting. A notice's updates are
// sent one at a time, in order, each with the notice's event id, which
// the first one sets.
type pacer struct {
	every time.Duration
	// spawn runs a delayed update off the caller, bounded by the
	// adapter's lifetime (Adapter.async).
	spawn  func(func(ctx context.Context))
	logger *slog.Logger

	mu    sync.Mutex
	notes map[string]*pacedNote
}

// send draws one update of a notice; evt is the notice's event id, empty
// until an update has posted it.
type send func(ctx context.Context, evt *id.EventID) error

// pacedNote is one notice's pace.
type pacedNote struct {
	mu      sync.Mutex // held while an update is sent
	evt     id.EventID
	last    time.Time // when an update was last sent
	waiting send      // the latest update not yet sent
	timer   bool      // a delayed send of waiting is scheduled
	done    bool      // the final update went: nothing more is sent
}

// idleNote is how long a notice nobody updates is kept in memory: one
// whose answer another replica posts never hears its final update here.
const idleNote = 10 * time.Minute

func newPacer(every time.Duration, spawn func(func(ctx context.Context)), logger *slog.Logger) *pacer {
	return &pacer{every: every, spawn: spawn, logger: logger, notes: map[string]*pacedNote{}}
}

// note returns key's note, making it, and forgets notes long idle.
func (p *pacer) note(key string) *pacedNote {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.notes[key]
	if !ok {
		n = &pacedNote{}
		p.notes[key] = n
		for k, old := range p.notes {
			if old.mu.TryLock() {
				idle := !old.timer && !old.last.IsZero() && time.Since(old.last) > idleNote
				old.mu.Unlock()
				if idle {
					delete(p.notes, k)
				}
			}
		}
	}
	return n
}

// update sends f now when the notice has not been updated within the
// interval, and otherwise keeps it to send when the interval is up.
func (p *pacer) update(ctx context.Context, key string, f send) error {
	n := p.note(key)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done {
		return nil
	}
	if wait := p.every - time.Since(n.last); wait > 0 {
		n.waiting = f
		if !n.timer {
			n.timer = true
			p.spawn(func(ctx context.Context) {
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
				p.flush(ctx, key, n)
			})
		}
		return nil
	}
	n.waiting = nil
	err := f(ctx, &n.evt)
	n.last = time.Now()
	return err
}

// flush sends the update that waited, unless the final one went first.
func (p *pacer) flush(ctx context.Context, key string, n *pacedNote) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.timer = false
	f := n.waiting
	n.waiting = nil
	if n.done || f == nil || ctx.Err() != nil {
		return
	}
	if err := f(ctx, &n.evt); err != nil {
		p.logger.Warn("matrix: edit a notice", "notice", key, "err", err)
	}
	n.last = time.Now()
}

// final sends f at once, after any update being sent, drops the update
// that waited, and ends the notice: later updates are not sent. The
// notice is forgotten afterwards.
func (p *pacer) final(ctx context.Context, key string, f send) error {
	n := p.note(key)
	n.mu.Lock()
	n.done, n.waiting = true, nil
	err := f(ctx, &n.evt)
	n.mu.Unlock()
	p.mu.Lock()
	if p.notes[key] == n {
		delete(p.notes, key)
	}
	p.mu.Unlock()
	return err
}
