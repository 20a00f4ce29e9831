package slack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
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

// showDraft makes the one call that shows d: the message's start, or
// what is new since.
func (a *Adapter) showDraft(ctx context.Context, dr *drafting, d bot.Draft) {
	api, channel, err := a.web(ctx, dr.thread.Channel.ID)
	if err != nil {
		dr.kind = msgFailed
		return
	}
	if dr.kind == "" {
		a.startDraft(ctx, api, channel, dr, d)
		return
	}
	if a.answeredAs(ctx, dr.id) != "" {
		// Answered through another replica: a draft now would draw over
		// the answer.
		dr.kind = msgFailed
		return
	}
	tasks := draftTasks(d.Cards)
	switch dr.kind {
	case streamNext:
		a.startStream(ctx, api, channel, dr, d)
		return
	case postNext:
		var ts string
		_, ts, err = api.PostMessageContext(ctx, channel, draftMessage(d, tasks, dr.id)...)
		if err == nil {
			dr.kind, dr.ts = msgPosted, ts
			_ = a.setShowing(ctx, dr.id, map[string]string{fieldMsg: msgPosted, fieldTS: ts})
		}
	case msgStream:
		chunks := dr.newChunks(d, tasks)
		if len(chunks) == 0 {
			return
		}
		_, _, err = api.AppendStreamContext(ctx, channel, dr.ts, slackapi.MsgOptionChunks(chunks...))
	case msgPosted:
		_, _, _, err = api.UpdateMessageContext(ctx, channel, dr.ts, draftMessage(d, tasks, dr.id)...)
	default:
		return
	}
	a.draftFailed(ctx, dr, err)
}

// startDraft starts a request's draft message: it streams where the
// request's thread can be streamed to (who asked is known, the workspace
// did not refuse streaming lately, no other request's draft streams in
// the thread), else posts it; the placeholder, when there is one, becomes
// the draft.
func (a *Adapter) startDraft(ctx context.Context, api *slackapi.Client, channel string, dr *drafting, d bot.Draft) {
	sh, err := a.memory.Showing(ctx, dr.id)
	if err != nil {
		dr.kind = msgFailed
		return
	}
	switch sh[fieldMsg] {
	case msgPlaceholder, msgPosted:
		if sh[fieldTS] != "" {
			dr.kind, dr.ts = msgPosted, sh[fieldTS]
		}
		dr.showDraftAgain() // in the next slot; a placeholder on its way is found then
		return
	case msgStream:
		if sh[fieldTS] != "" {
			dr.kind, dr.ts = msgStream, sh[fieldTS]
		}
		dr.showDraftAgain()
		return
	case msgAnswer, msgFailed:
		dr.kind = msgFailed
		return
	}
	stream := sh[fieldUser] != "" && sh[fieldTeam] != "" && !a.refusedBefore(ctx, "stream", dr.thread.Channel.ID)
	if stream {
		// One streamed draft a thread at a time: then the thread's one
		// unfinished stream is this request's, should it go unrecorded.
		held, err := a.memory.HoldStream(ctx, dr.thread, dr.id, showingTTL)
		stream = err == nil && held
	}
	kind := postNext
	if stream {
		kind = msgStream
	}
	won, _, err := a.memory.ShowingClaim(ctx, dr.id, fieldMsg, kind, nil, showingTTL)
	if err != nil || !won {
		if stream {
			a.releaseStream(ctx, dr.thread, dr.id)
		}
		return
	}
	a.rememberThread(ctx, dr.thread)
	if !stream {
		dr.kind = postNext
		dr.showDraftAgain()
		return
	}
	dr.user, dr.team = sh[fieldUser], sh[fieldTeam]
	a.startStream(ctx, api, channel, dr, d)
}

// startStream makes the draft's streamed message, its showing claimed as
// a stream.
func (a *Adapter) startStream(ctx context.Context, api *slackapi.Client, channel string, dr *drafting, d bot.Draft) {
	title := d.Title
	if title == "" {
		title = "Drafting a plan…"
	}
	chunks := []slackapi.StreamChunk{
		slackapi.NewMarkdownTextChunk("_" + draftOpening + "_\n"),
		slackapi.NewPlanUpdateChunk(clip(plain(title), maxPlanTitle)),
	}
	dr.titled, dr.shown = title, nil
	chunks = append(chunks, dr.taskChunks(draftTasks(d.Cards))...)
	_, ts, err := api.StartStreamContext(ctx, channel,
		slackapi.MsgOptionTS(dr.thread.ID),
		slackapi.MsgOptionRecipientUserID(dr.user), slackapi.MsgOptionRecipientTeamID(dr.team),
		slackapi.MsgOptionTaskDisplayMode(slackapi.TaskDisplayModePlan),
		slackapi.MsgOptionChunks(chunks...))
	var rl *slackapi.RateLimitedError
	switch {
	case err == nil:
		dr.kind, dr.ts = msgStream, ts
		_ = a.setShowing(ctx, dr.id, map[string]string{fieldTS: ts})
	case refusal(err):
		a.noteRefusal(ctx, "stream", dr.thread.Channel.ID, err)
		dr.kind, dr.shown = postNext, nil
		_ = a.setShowing(ctx, dr.id, map[string]string{fieldMsg: postNext})
		a.releaseStream(ctx, dr.thread, dr.id)
		dr.showDraftAgain()
	case errors.As(err, &rl):
		// Slack made no message: it is started in a later slot.
		a.pace.hold(dr.thread.Channel.ID, max(rl.RetryAfter, paceEvery))
		dr.kind = streamNext
		dr.showDraftAgain()
	default:
		// Slack may have made the message though its ts never came (the
		// call timed out, the reply was lost): the showing stays a
		// stream without a ts, which the answer looks for in the thread.
		a.logger.Warn("slack: start the draft's stream; the answer comes without it", "request", dr.id, "err", err)
		dr.kind = msgFailed
	}
}

// releaseStream lets another request's draft stream in t, request id's
// stream being answered (or never started).
func (a *Adapter) releaseStream(ctx context.Context, t board.Thread, id board.RequestID) {
	// Its own context: the call's may be what ended the stream.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := a.memory.ReleaseStream(ctx, t, id); err != nil {
		a.logger.Warn("slack: let the thread stream another draft", "request", id, "err", err)
	}
}

// showDraftAgain asks for the draft to be shown in the next slot.
func (dr *drafting) showDraftAgain() {
	dr.mu.Lock()
	dr.fresh = true
	dr.mu.Unlock()
	dr.poke()
}

// draftFailed stops showing a draft after a call failed (but for a 429:
// the next slot tries again); the answer is posted as usual.
func (a *Adapter) draftFailed(ctx context.Context, dr *drafting, err error) {
	if err == nil {
		return
	}
	var rl *slackapi.RateLimitedError
	if errors.As(err, &rl) {
		a.pace.hold(dr.thread.Channel.ID, max(rl.RetryAfter, paceEvery))
		dr.showDraftAgain()
		return
	}
	a.logger.Warn("slack: show the draft; the answer comes without it", "request", dr.id, "err", err)
	// The call's context may be what ended it: the note has its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if dr.ts == "" {
		dr.kind = msgFailed
		_ = a.setShowing(ctx, dr.id, map[string]string{fieldMsg: msgFailed})
		return
	}
	dr.kind = msgStale // the message stays for the answer to replace
}

// newChunks are the task updates of d's cards not shown yet, and the
// plan's title once the model wrote it.
func (dr *drafting) newChunks(d bot.Draft, tasks []planTask) []slackapi.StreamChunk {
	var chunks []slackapi.StreamChunk
	if d.Title != "" && d.Title != dr.titled {
		dr.titled = d.Title
		chunks = append(chunks, slackapi.NewPlanUpdateChunk(clip(plain(d.Title), maxPlanTitle)))
	}
	if len(tasks) > len(dr.shown) {
		chunks = append(chunks, dr.taskChunks(tasks[len(dr.shown):])...)
	}
	return chunks
}

// taskChunks are tasks as task_update chunks, noted as shown.
func (dr *drafting) taskChunks(tasks []planTask) []slackapi.StreamChunk {
	var chunks []slackapi.StreamChunk
	for _, t := range tasks {
		if len(dr.shown) >= maxPlanTasks {
			break
		}
		dr.shown = append(dr.shown, t.ID)
		chunks = append(chunks, taskChunk(t))
	}
	return chunks
}

// draftTasks are a draft's cards as pending tasks, each marked a draft.
func draftTasks(cards []plan.CardDraft) []planTask {
	tasks := make([]planTask, len(cards))
	for i, c := range cards {
		details := "Draft, not checked yet"
		if c.Assignee != "" {
			details += " · Assignee: " + c.Assignee
		}
		tasks[i] = planTask{ID: taskID(c.TempID, i), Title: c.Title, Details: details, Status: bot.TaskPending}
	}
	return tasks
}

// draftMessage is a draft posted as a message (where streaming is
// refused): the plan so far, marked a draft, its metadata naming the
// request.
func draftMessage(d bot.Draft, tasks []planTask, id board.RequestID) []slackapi.MsgOption {
	title := d.Title
	if title == "" {
		title = "Drafting a plan…"
	}
	block, folded := planBlock("bobnet_draft:"+string(id), "Draft: "+title, tasks)
	blocks := []slackapi.Block{contextBlock(":pencil2: " + draftOpening), block}
	if folded > 0 {
		blocks = append(blocks, contextBlock(fmt.Sprintf("…and %d more cards.", folded)))
	}
	return []slackapi.MsgOption{
		slackapi.MsgOptionText(fallback("BobNet is drafting a plan: "+title), false),
		slackapi.MsgOptionBlocks(blocks...),
		slackapi.MsgOptionMetadata(slackapi.SlackMetadata{EventType: draftEvent, EventPayload: map[string]any{"request_id": string(id)}}),
		slackapi.MsgOptionTS(d.Thread.ID),
	}
}
