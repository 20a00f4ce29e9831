package slack

import (
	"context"
	"errors"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
)

// Slack rates its methods per workspace and, for posting, per channel:
// about one message a second in a channel. The calls that show work in
// progress (a draft streamed card by card, a run's progress redrawn) are
// many, so they go through a per-channel budget: at most one call each
// paceEvery in a channel, and none before the Retry-After of a 429 is
// over.
const (
	paceEvery = time.Second
	// paceRetries is how often one call is tried again after a 429.
	paceRetries = 3
	// paceMaxWait bounds a Retry-After honoured before giving up.
	paceMaxWait = 30 * time.Second
	// paceKeep bounds the channels remembered; past it the quiet ones go.
	paceKeep = 10000
)

// pacer holds each channel's next free moment.
type pacer struct {
	now  func() time.Time
	mu   sync.Mutex
	next map[string]time.Time
}

func newPacer(now func() time.Time) *pacer {
	return &pacer{now: now, next: map[string]time.Time{}}
}

// reserve takes the channel's next slot and says how long to wait for it.
func (p *pacer) reserve(channel string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if len(p.next) >= paceKeep {
		for k, t := range p.next {
			if t.Before(now) {
				delete(p.next, k)
			}
		}
	}
	at := p.next[channel]
	if at.Before(now) {
		at = now
	}
	p.next[channel] = at.Add(paceEvery)
	return at.Sub(now)
}

// hold keeps the channel closed for d (a 429's Retry-After).
func (p *pacer) hold(channel string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if at := p.now().Add(d); at.After(p.next[channel]) {
		p.next[channel] = at
	}
}

// paced makes call in channel's budget, waiting for its slot, and tries
// it again after a 429 once the Retry-After is over (at most paceRetries
// times, never waiting past ctx or paceMaxWait).
func (a *Adapter) paced(ctx context.Context, channel string, call func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		if err := sleep(ctx, a.pace.reserve(channel)); err != nil {
			return err
		}
		err := call(ctx)
		var rl *slackapi.RateLimitedError
		if !errors.As(err, &rl) || attempt >= paceRetries || rl.RetryAfter > paceMaxWait {
			return err
		}
		a.logger.Info("slack: rate limited; waiting as asked", "channel", channel, "retry_after", rl.RetryAfter)
		a.pace.hold(channel, max(rl.RetryAfter, paceEvery))
	}
}

// unpaced makes call at once, outside channel's budget, but honours a
// 429 as paced does: it waits the Retry-After (closing the channel for
// that long) and tries again.
func (a *Adapter) unpaced(ctx context.Context, channel string, call func(context.Context) error) error {
	err := call(ctx)
	var rl *slackapi.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter > paceMaxWait {
		return err
	}
	a.pace.hold(channel, max(rl.RetryAfter, paceEvery))
	return a.paced(ctx, channel, call)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
