package bot

import (
	"context"
	"sync"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/planner"
)

// DraftEvery is how often at most a request's draft is shown while the
// model writes its plan: drafts heard in between are coalesced into the
// next.
const DraftEvery = time.Second

// drafting shows one request's plan while the model writes it, through
// the surface's Drafter (Registration.Drafts). Its calls go through the
// request's channel's outbound queue, so a slow surface never holds the
// model's stream, and the answer, queued on the same channel after
// planning, is posted after the last of them: once stopped, a call still
// queued does nothing, so none comes after the answer.
type drafting struct {
	e       *Engine
	drafter Drafter
	channel string
	request board.RequestID
	thread  board.Thread

	mu      sync.Mutex
	latest  Draft
	pending bool // a call is queued, or waits for its time
	last    time.Time
	timer   *time.Timer
	stopped bool
}

// startDrafting is r's drafting, or nil when its surface shows no
// drafts.
func (e *Engine) startDrafting(r board.Request) *drafting {
	d := e.registration(r.Thread.Channel.Source).Drafts
	if d == nil {
		return nil
	}
	return &drafting{e: e, drafter: d, channel: r.Thread.Channel.Key(), request: r.ID, thread: r.Thread}
}

// heard takes the plan as read so far. The shown list only grows: a draft
// with no more cards than the last (a retried stream starting over) is
// kept back until it has more.
func (d *drafting) heard(pd planner.Draft) {
	d.mu.Lock()
	defer d.mu.Unlock()
	grew := len(pd.Cards) > len(d.latest.Cards) || (len(pd.Cards) == len(d.latest.Cards) && d.latest.Title == "" && pd.Title != "")
	if d.stopped || !grew {
		return
	}
	d.latest = Draft{Request: d.request, Thread: d.thread, Title: pd.Title, Cards: pd.Cards}
	if d.pending {
		return // the call waiting shows this one
	}
	d.pending = true
	if wait := time.Until(d.last.Add(DraftEvery)); wait > 0 {
		d.timer = time.AfterFunc(wait, func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			if !d.stopped {
				d.queue()
			}
		})
		return
	}
	d.queue()
}

// queue puts a call in the channel's queue; d.mu is held.
func (d *drafting) queue() {
	if err := d.e.out.send(d.channel, d.show); err != nil {
		d.pending = false
		d.e.logger.Debug("draft not shown: "+err.Error(), "request", d.request)
	}
}

// show calls the Drafter with the latest draft, unless planning ended.
func (d *drafting) show(ctx context.Context) {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	dr := d.latest
	d.pending, d.last = false, time.Now()
	d.mu.Unlock()
	if err := d.drafter.Draft(ctx, dr); err != nil {
		d.e.logger.Warn("show draft", "request", d.request, "channel", d.channel, "err", err)
	}
}

// stop ends the drafting when planning ends, before the answer is
// queued: no call starts after it.
func (d *drafting) stop() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
	}
}

// onDraft is what the planner calls with drafts; nil without drafting.
func (d *drafting) onDraft() func(planner.Draft) {
	if d == nil {
		return nil
	}
	return d.heard
}
