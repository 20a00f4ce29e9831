package slack

import (
	"context"
	"errors"
	"fmt"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
)

// The calls that show a draft (drafts.go keeps when): the stream's start
// and its task updates, or the draft posted and redrawn as a message.

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
