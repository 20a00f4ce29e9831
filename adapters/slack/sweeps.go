package slack

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bobnet/bobnet/board"
)

// An answer posted beside no draft, where a draft may still be on its way
// (its replica died with its call unanswered, or Redis was away), is
// followed by a look at its thread a call's timeout later, which deletes
// a draft landed by then: the answering replica looks itself, and any
// replica looks again later should it die first (a due set in Redis).

// Dues keeps work due later that any replica does, each piece once;
// *redisstore.InFlight is one.
type Dues interface {
	AddDue(ctx context.Context, set, member string, at time.Time) error
	DropDue(ctx context.Context, set, member string) error
	TakeDue(ctx context.Context, set string, now time.Time, n int, lease time.Duration) ([]string, error)
}

// sweepSet is the due set of the looks at threads, and sweepEvery how
// often each replica takes those due.
const (
	sweepSet   = "slack-sweeps"
	sweepEvery = 2 * time.Second
)

// sweep is one look at a thread for request Request's draft, its answer
// posted as message Answer.
type sweep struct {
	Request board.RequestID `json:"request"`
	Channel string          `json:"channel"`
	Thread  string          `json:"thread"`
	Answer  string          `json:"answer"`
}

func (sw sweep) thread() board.Thread {
	return board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: sw.Channel}, ID: sw.Thread}
}

// sweepLater looks in t once more for a draft of request id after its
// answer was posted as message answer, beside none found: a placeholder
// or stream whose replica died with its call on its way lands as late as
// the call's timeout, unrecorded, and is taken away then. A replica that
// stops sooner looks at once, and the look due later stays for another.
func (a *Adapter) sweepLater(ctx context.Context, t board.Thread, id board.RequestID, answer string) {
	sw := sweep{Request: id, Channel: t.Channel.ID, Thread: t.ID, Answer: answer}
	b, _ := json.Marshal(sw)
	member := string(b)
	err := whileAway(ctx, func() error {
		return a.memory.AddDue(ctx, sweepSet, member, time.Now().Add(2*a.cfg.Timeout))
	})
	if err != nil {
		a.logger.Warn("slack: keep the late look for other replicas; this one looks alone", "request", id, "err", err)
	}
	backstop := err == nil
	a.afterAck("look for a late draft", func(ctx context.Context) {
		select {
		case <-time.After(a.cfg.Timeout):
		case <-a.work.Done():
			a.sweep(ctx, sw, !backstop)
			return
		}
		a.sweep(ctx, sw, true)
		if backstop {
			if err := a.memory.DropDue(ctx, sweepSet, member); err != nil {
				a.logger.Warn("slack: drop the late look done", "request", id, "err", err)
			}
		}
	})
}

// takeSweeps does the looks due whose replicas did not do them (they
// died first), every sweepEvery until the adapter stops.
func (a *Adapter) takeSweeps() {
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-a.work.Done():
			return
		case <-tick.C:
		}
		// A look is taken for as long as it may take (a call, tried
		// twice, and its delete): should this replica die during it, it
		// falls due again.
		lease := 3 * a.cfg.Timeout
		ctx, cancel := context.WithTimeout(a.work, lease)
		due, err := a.memory.TakeDue(ctx, sweepSet, time.Now(), 10, lease)
		if err != nil {
			a.logger.Debug("slack: take the late looks due", "err", err)
		}
		for _, m := range due {
			var sw sweep
			if json.Unmarshal([]byte(m), &sw) == nil && sw.Request != "" {
				a.sweep(ctx, sw, true)
			}
			if err := a.memory.DropDue(ctx, sweepSet, m); err != nil {
				a.logger.Warn("slack: drop the late look done", "request", sw.Request, "err", err)
			}
		}
		cancel()
	}
}

// sweep looks in sw's thread for its request's draft and deletes it; the
// answer itself is never taken (another attempt may have written it into
// the draft). last lets the thread stream another request's draft after
// the look.
func (a *Adapter) sweep(ctx context.Context, sw sweep, last bool) {
	t := sw.thread()
	if last {
		defer a.releaseStream(ctx, t, sw.Request)
	}
	// Without the showing (Redis away), a stream is not looked for: the
	// thread's stream may be another request's.
	var sh map[string]string
	err := whileAway(ctx, func() (err error) {
		sh, err = a.memory.Showing(ctx, sw.Request)
		return err
	})
	if err != nil {
		a.logger.Warn("slack: read the request's showing; looking for a placeholder alone", "request", sw.Request, "err", err)
	}
	ts, err := a.findDraft(ctx, t, sw.Request, sh[fieldMsg] == msgStream, sw.Answer, sh[fieldAnswered])
	if err != nil || ts == "" {
		return
	}
	api, channel, err := a.web(ctx, t.Channel.ID)
	if err == nil {
		err = deleteDraft(ctx, api, channel, ts)
	}
	if err != nil {
		a.logger.Warn("slack: delete a draft left beside the answer", "request", sw.Request, "err", err)
	}
}
