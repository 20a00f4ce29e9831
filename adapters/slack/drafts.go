package slack

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// A request's draft is shown as one message in its thread while the
// model writes the plan: a streamed message (chat.startStream with its
// tasks shown as a plan, chat.appendStream a task_update for each new
// card), or where Slack refuses streaming a message posted once and
// redrawn (chat.update), or the placeholder posted where Slack showed no
// status. Drafts go out from a goroutine of their own, at most one call a
// second per channel (pace.go) with the newest draft each time, so a slow
// Slack never holds the worker planning the request. The answer
// (answer.go) ends the draft and turns its message into the answer.

// draftIdle ends the goroutine of a draft that got no new cards for this
// long (its request's answer went out through another replica, or the
// model stalled); a later draft starts it again.
const draftIdle = 2 * time.Minute

// drafts are the drafts being shown by this replica, by request.
type drafts struct {
	mu sync.Mutex
	by map[board.RequestID]*drafting
}

func newDrafts() *drafts { return &drafts{by: map[board.RequestID]*drafting{}} }

// drafting is one request's draft: the newest the engine gave and what of
// it the message shows.
type drafting struct {
	id     board.RequestID
	thread board.Thread
	kick   chan struct{} // cap 1: a new draft or the end
	done   chan struct{} // closed when the goroutine ends
	end    chan struct{} // closed by finishDraft

	mu       sync.Mutex
	latest   bot.Draft
	fresh    bool // latest is not shown yet
	finished bool

	// Kept by the goroutine alone.
	kind       string // "", msgStream, msgPosted, msgFailed, postNext or streamNext
	ts         string
	user, team string   // a stream's recipient
	shown      []string // task ids shown, in order
	titled     string   // the plan title shown
}

// Kinds only the draft's goroutine knows: msgStale is a draft message no
// longer drawn after a call failed, left for the answer to replace;
// streamNext a stream whose start Slack answered 429, started in the next
// slot.
const (
	msgStale   = "stale"
	streamNext = "stream-next"
)

// Draft shows d, the request's plan as parsed so far, in its thread: it
// keeps d as the newest and returns; the draft's goroutine shows it.
func (a *Adapter) Draft(_ context.Context, d bot.Draft) error {
	if d.Request == "" || d.Thread.Channel.Source != board.SourceSlack || len(d.Cards) == 0 && d.Title == "" {
		return nil
	}
	a.drafts.mu.Lock()
	dr, ok := a.drafts.by[d.Request]
	if !ok {
		dr = &drafting{id: d.Request, thread: d.Thread, kick: make(chan struct{}, 1), done: make(chan struct{}), end: make(chan struct{})}
		a.drafts.by[d.Request] = dr
		go a.pump(dr)
	}
	a.drafts.mu.Unlock()
	d.Cards = slices.Clone(d.Cards) // shown later, by another goroutine
	dr.mu.Lock()
	if !dr.finished && len(d.Cards) >= len(dr.latest.Cards) {
		dr.latest, dr.fresh = d, true
	}
	dr.mu.Unlock()
	dr.poke()
	return nil
}

func (dr *drafting) poke() {
	select {
	case dr.kick <- struct{}{}:
	default:
	}
}

// take is the newest draft when it is not shown yet.
func (dr *drafting) take() (bot.Draft, bool, bool) {
	dr.mu.Lock()
	defer dr.mu.Unlock()
	d, fresh := dr.latest, dr.fresh
	dr.fresh = false
	return d, fresh, dr.finished
}

// finishDraft ends request id's draft on this replica, waiting (within
// ctx) for a call under way, and gives what its message showed, its kind
// and its ts (which Redis may lack, when it was away as they were
// recorded).
func (a *Adapter) finishDraft(ctx context.Context, id board.RequestID) (shown []string, kind, ts string) {
	a.drafts.mu.Lock()
	dr, ok := a.drafts.by[id]
	delete(a.drafts.by, id)
	a.drafts.mu.Unlock()
	if !ok {
		return nil, "", ""
	}
	dr.mu.Lock()
	dr.finished = true
	dr.mu.Unlock()
	close(dr.end)
	select {
	case <-dr.done:
		return dr.shown, dr.kind, dr.ts
	case <-ctx.Done():
		return nil, "", ""
	}
}

// pump shows a request's drafts, the newest at each of its channel's
// slots, until the answer ends it (or it idles).
func (a *Adapter) pump(dr *drafting) {
	defer close(dr.done)
	idle := time.NewTimer(draftIdle)
	defer idle.Stop()
	for {
		select {
		case <-dr.kick:
		case <-idle.C:
			a.drafts.mu.Lock()
			if a.drafts.by[dr.id] == dr {
				delete(a.drafts.by, dr.id)
			}
			a.drafts.mu.Unlock()
			return
		case <-a.work.Done():
			return
		case <-dr.end:
			return
		}
		idle.Reset(draftIdle)
		if _, _, finished := dr.peek(); finished {
			return
		}
		// The wait ends with the draft, and the answer has the slot.
		wait, slot := a.pace.reserveAt(dr.thread.Channel.ID)
		if !dr.wait(a.work, wait) {
			a.pace.giveBack(dr.thread.Channel.ID, slot)
			return
		}
		d, fresh, finished := dr.take()
		if finished {
			return
		}
		if fresh || dr.kind == postNext || dr.kind == streamNext {
			// Not cut off as the replica stops: a call cut off may still
			// make its message, which the answer could then not end.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(a.work), a.cfg.Timeout)
			a.showDraft(ctx, dr, d)
			cancel()
		}
	}
}

// wait waits d for the draft's slot: false when the draft ended or the
// adapter stopped first.
func (dr *drafting) wait(work context.Context, d time.Duration) bool {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-dr.end:
	case <-work.Done():
	}
	return false
}

func (dr *drafting) peek() (bot.Draft, bool, bool) {
	dr.mu.Lock()
	defer dr.mu.Unlock()
	return dr.latest, dr.fresh, dr.finished
}

// showDraftAgain asks for the draft to be shown in the next slot.
func (dr *drafting) showDraftAgain() {
	dr.mu.Lock()
	dr.fresh = true
	dr.mu.Unlock()
	dr.poke()
}
