package slack

import (
	"context"
	"fmt"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
)

// previewEvent is the type of the message metadata every preview
// carries, naming its proposal: a preview whose post went out but was not
// heard back (the post timed out, the replica died before recording it)
// is found in its thread instead of being posted a second time.
const previewEvent = "bobnet_preview"

// PostPreview posts a pending proposal's preview in its thread.
func (a *Adapter) PostPreview(ctx context.Context, p board.Proposal) (board.MessageRef, error) {
	// The thread is remembered (a plain reply in it is a request) while
	// the preview goes out; both are done when this returns.
	remembered := make(chan struct{})
	go func() {
		defer close(remembered)
		a.rememberThread(ctx, p.Thread)
	}()
	defer func() { <-remembered }()
	if p.Reposting {
		if ts := a.answeredAs(ctx, p.RequestID); ts != "" {
			a.logger.Info("preview went out before as the request's draft; not posting it again", "proposal", p.ID, "message", ts)
			return board.MessageRef(ts), nil
		}
		ts, err := a.findPreview(ctx, p)
		if err != nil && ctx.Err() == nil {
			// Once more: posting blind is the last resort.
			time.Sleep(200 * time.Millisecond)
			ts, err = a.findPreview(ctx, p)
		}
		if err != nil {
			// Not knowing is no reason to leave the request unanswered.
			a.logger.Warn("look for an earlier preview; posting it", "proposal", p.ID, "err", err)
		}
		if ts != "" {
			a.logger.Info("preview was posted before; not posting it again", "proposal", p.ID, "message", ts)
			return ts, nil
		}
	}
	metadata := slackapi.SlackMetadata{EventType: previewEvent, EventPayload: map[string]any{"proposal_id": string(p.ID)}}
	// Drawn once, when a path needs them: a streamed draft is ended
	// with the blocks below its plan, not with these.
	blocks := sync.OnceValue(func() []slackapi.Block { return PreviewBlocks(p, a.cfg.PublicURL) })
	lookAgain := false
	if p.RequestID != "" {
		ts, done, again, err := a.answerDraft(ctx, p.RequestID, p.Thread, answer{
			text: previewText(p), blocks: blocks, metadata: &metadata,
			settle: func(shown []string) []slackapi.StreamChunk { return settlePreview(p, shown) },
			below:  func() []slackapi.Block { return previewBelow(p, a.cfg.PublicURL) },
		})
		if done {
			if err != nil {
				return "", fmt.Errorf("post preview: %w", err)
			}
			a.homeChanged(ctx, p)
			return board.MessageRef(ts), nil
		}
		lookAgain = again
	}
	api, channel, err := a.web(ctx, p.Thread.Channel.ID)
	if err != nil {
		return "", fmt.Errorf("post preview: %w", err)
	}
	_, ts, err := api.PostMessageContext(ctx, channel,
		slackapi.MsgOptionText(previewText(p), false),
		slackapi.MsgOptionBlocks(blocks()...),
		slackapi.MsgOptionMetadata(metadata),
		slackapi.MsgOptionTS(p.Thread.ID))
	if err != nil {
		return "", fmt.Errorf("post preview: %w", err)
	}
	a.answered(ctx, p.Thread, p.RequestID, ts, lookAgain)
	a.homeChanged(ctx, p)
	return board.MessageRef(ts), nil
}

// settlePreview settles a streamed draft with its validated plan: the
// plan's title, every card as checked (title with its handle-to-be,
// assignee and criteria, pending), and a draft card the checks dropped
// shown as dropped.
func settlePreview(p board.Proposal, shown []string) []slackapi.StreamChunk {
	tasks := cardTasks(p.Plan, p.Warnings, pending)
	if len(tasks) > maxPlanTasks {
		tasks = tasks[:maxPlanTasks]
	}
	chunks := []slackapi.StreamChunk{slackapi.NewPlanUpdateChunk(clip(plain(planTitle(p.Plan)), maxPlanTitle))}
	kept := map[string]bool{}
	for _, t := range tasks {
		kept[t.ID] = true
		chunks = append(chunks, taskChunk(t))
	}
	for _, id := range shown {
		if !kept[id] {
			c := slackapi.NewTaskUpdateChunk(id, "Dropped from the plan")
			c.Status, c.Details = slackapi.TaskCardStatusError, "The checks did not keep this draft card."
			chunks = append(chunks, c)
		}
	}
	return chunks
}

// previewBelow is what a streamed draft shows under its settled plan:
// the preview but its plan block (the stream's own plan is it).
func previewBelow(p board.Proposal, publicURL string) []slackapi.Block {
	blocks := previewHead(p)
	if plan := proposalPlan(p, publicURL, pending); len(plan) > 1 {
		blocks = append(blocks, plan[1:]...) // the fold line
	}
	return append(blocks, previewTail(p)...)
}

// findPreview looks in p's thread for a preview of p that was posted
// already (conversations.replies with metadata); "" when there is none.
func (a *Adapter) findPreview(ctx context.Context, p board.Proposal) (board.MessageRef, error) {
	api, channel, err := a.web(ctx, p.Thread.Channel.ID)
	if err != nil {
		return "", err
	}
	cursor := ""
	for range 10 { // 2,000 replies: far more than a thread BobNet plans in
		msgs, more, next, err := api.GetConversationRepliesContext(ctx, &slackapi.GetConversationRepliesParameters{
			ChannelID: channel, Timestamp: p.Thread.ID, Cursor: cursor, Limit: 200, IncludeAllMetadata: true,
		})
		if err != nil {
			return "", fmt.Errorf("conversations.replies: %w", err)
		}
		for _, m := range msgs {
			if m.Metadata.EventType == previewEvent && fmt.Sprint(m.Metadata.EventPayload["proposal_id"]) == string(p.ID) {
				return board.MessageRef(m.Timestamp), nil
			}
		}
		if !more || next == "" {
			return "", nil
		}
		cursor = next
	}
	return "", nil
}
