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

// pacer holds each channel's next free moment, and the end of a 429's
// wait where one is under way.
type pacer struct {
	now  func() time.Time
	mu   sync.Mutex
	next map[string]time.Time
	held map[string]time.Time
}

func newPacer(now func() time.Time) *pacer {
	return &pacer{now: now, next: map[string]time.Time{}, held: map[string]time.Time{}}
}

// reserve takes the channel's next slot and says how long to wait for it.
func (p *pacer) reserve(channel string) time.Duration {
	d, _ := p.reserveAt(channel)
	return d
}

// reserveAt is reserve, also giving the slot's moment, for giveBack.
func (p *pacer) reserveAt(channel string) (time.Duration, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if len(p.next) >= paceKeep {
		for k, t := range p.next {
			if t.Before(now) {
				delete(p.next, k)
			}
		}
		for k, t := range p.held {
			if t.Before(now) {
				delete(p.held, k)
			}
		}
	}
	at := p.next[channel]
	if at.Before(now) {
		at = now
	}
	p.next[channel] = at.Add(paceEvery)
	return at.Sub(now), at
}

// giveBack returns the channel's slot at, reserved and not used, when no
// slot after it was taken since: the next call in the channel may have
// it, rather than wait a slot longer for a call that was never made.
func (p *pacer) giveBack(channel string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next[channel].Equal(at.Add(paceEvery)) {
		p.next[channel] = at
	}
}

// hold keeps the channel closed for d (a 429's Retry-After).
func (p *pacer) hold(channel string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := p.now().Add(d)
	if at.After(p.next[channel]) {
		p.next[channel] = at
	}
	if at.After(p.held[channel]) {
		p.held[channel] = at
	}
}

// heldFor says how long a 429's wait in channel has still to go (0 when
// none): a call made outside the budget waits it out too.
func (p *pacer) heldFor(channel string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[channel].Sub(p.now())
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
// 429 as paced does: it waits out a Retry-After under way, and after its
// own 429 waits the Retry-After (closing the channel for that long) and
// tries again.
func (a *Adapter) unpaced(ctx context.Context, channel string, call func(context.Context) error) error {
	if err := sleep(ctx, a.pace.heldFor(channel)); err != nil {
		return err
	}
	err := call(ctx)
	var rl *slackapi.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter > paceMaxWait {
		return err
	}
	a.pace.hold(channel, max(rl.RetryAfter, paceEvery))
	return a.paced(ctx, channel, call)
}

// whileAway calls fn until it succeeds, every 200 ms for up to
// answerWait: a Redis restarting is away a second or two, and so is a
// Slack answering 500 for a moment.
func whileAway(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(answerWait)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) || sleep(ctx, 200*time.Millisecond) != nil {
			return err
		}
	}
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
