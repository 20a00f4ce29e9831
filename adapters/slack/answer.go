package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
)

// answer is a request's answer as Slack is sent it: the message's blocks,
// text and metadata, and, for a streamed draft, the chunks that settle
// the draft's tasks (given the ids the draft showed) and the blocks
// below them.
type answer struct {
	text string
	// blocks and below are drawn when a path needs them: a streamed
	// draft is ended with below, any other message shows blocks.
	blocks   func() []slackapi.Block
	metadata *slackapi.SlackMetadata
	// settle and below end a streamed draft: its tasks as the answer
	// leaves them, and the blocks shown under them.
	settle func(shown []string) []slackapi.StreamChunk
	below  func() []slackapi.Block
}

// answerWait bounds the wait for a placeholder or draft message on its
// way when the answer comes.
const answerWait = 3 * time.Second

// answerDraft turns request id's draft message into its answer: the
// streamed draft is stopped with it (chat.stopStream), a placeholder or
// posted draft updated to it (chat.update). It returns the answer's
// message and true when it did, false when there was no draft to turn
// (the caller posts the answer, then calls answered, looking again when
// told to). Should the draft's message refuse the answer, the answer
// is posted and the draft deleted: none is left behind.
func (a *Adapter) answerDraft(ctx context.Context, id board.RequestID, t board.Thread, ans answer) (ts string, done, lookAgain bool, err error) {
	shown, kind, local := a.finishDraft(ctx, id)
	drew := local != "" && (kind == msgStream || kind == msgPosted)
	var first bool
	var sh map[string]string
	claim := func() (err error) {
		first, sh, err = a.memory.ShowingClaim(ctx, id, fieldMsg, msgAnswer, nil, showingTTL)
		return err
	}
	if drew {
		err = claim()
	} else {
		// A placeholder or draft another replica posted is recorded in
		// Redis: should Redis be away (restarting, say), it is waited
		// for a while, then the placeholder looked for in the thread.
		err = whileAway(ctx, claim)
	}
	if err != nil {
		a.logger.Warn("slack: claim the draft for the answer", "request", id, "err", err)
		if drew {
			// This replica drew the draft: no other knows its message
			// to answer in, so the answer goes there rather than
			// beside it.
			sh = map[string]string{}
		} else {
			// A placeholder or posted draft in the thread, whichever
			// replica posted it, names the request in its metadata.
			found, err := a.findDraft(ctx, t, id, false)
			if err != nil || found == "" {
				return "", false, true, nil
			}
			sh = map[string]string{fieldTS: found, fieldMsg: msgPlaceholder}
		}
		first, err = true, nil
	}
	if sh[fieldTS] == "" && drew {
		// This replica drew the draft, but Redis was away when its
		// message was recorded: the draft's own record is as good.
		sh[fieldTS], sh[fieldMsg] = local, kind
	}
	// A draft on its way is waited for, unless it is this replica's and
	// its start failed.
	for deadline := time.Now().Add(answerWait); !first && kind != msgFailed && err == nil && sh[fieldTS] == "" && inFlight(sh[fieldMsg]) && time.Now().Before(deadline); {
		if sleep(ctx, 100*time.Millisecond) != nil {
			break
		}
		sh, err = a.memory.Showing(ctx, id)
	}
	if err != nil {
		// Redis went away while the draft was waited for: the answer is
		// posted, and the thread looked at later for a draft.
		return "", false, true, nil
	}
	if sh[fieldAnswered] != "" {
		// It was turned already: a second reply naming the request is a
		// message of its own.
		return "", false, false, nil
	}
	ts = sh[fieldTS]
	if ts == "" {
		// No draft message recorded. Where Slack refused the thread
		// status, or a draft was claimed, it may still be in the thread,
		// made by a replica that died before recording it or whose call
		// timed out: a placeholder's or posted draft's metadata names the
		// request, and a stream is the thread's one unfinished stream
		// (its request holds the thread's stream).
		if sh[fieldStatus] != "refused" && !inFlight(sh[fieldMsg]) {
			return "", false, false, nil
		}
		stream := sh[fieldMsg] == msgStream
		found, err := a.findDraft(ctx, t, id, stream)
		if err != nil || found == "" {
			return "", false, true, nil
		}
		ts = found
		if !stream {
			sh[fieldMsg] = msgPlaceholder
		}
	}
	api, channel, err := a.web(ctx, t.Channel.ID)
	if err != nil {
		return "", true, false, err
	}
	switch sh[fieldMsg] {
	case msgStream:
		// The answer is not work in progress: it goes at once (after a
		// 429's wait), even right after a draft call; two calls within a
		// second at most, a burst Slack allows.
		err = a.unpaced(ctx, t.Channel.ID, func(ctx context.Context) error {
			opts := []slackapi.MsgOption{slackapi.MsgOptionBlocks(ans.below()...)}
			if chunks := ans.settle(shown); len(chunks) > 0 {
				opts = append(opts, slackapi.MsgOptionChunks(chunks...))
			}
			if ans.metadata != nil {
				opts = append(opts, slackapi.MsgOptionMetadata(*ans.metadata))
			}
			_, _, err := api.StopStreamContext(ctx, channel, ts, opts...)
			return err
		})
		if err != nil {
			a.logger.Warn("slack: stop the draft's stream; updating it instead", "request", id, "err", err)
			err = a.updateTo(ctx, api, channel, t, ts, ans)
		}
	default:
		err = a.updateTo(ctx, api, channel, t, ts, ans)
	}
	if err != nil {
		// The draft's message took no answer: post it, then take the
		// draft away.
		a.logger.Warn("slack: turn the draft into the answer; posting it instead", "request", id, "err", err)
		posted, err := a.replaceDraft(ctx, api, channel, t, ts, ans)
		if err != nil {
			return "", true, false, err
		}
		a.answered(ctx, t, id, posted, false)
		return posted, true, false, nil
	}
	if sh[fieldStatus] == "set" {
		// The answer posted no new message, which is what clears a
		// status on its own.
		if err := a.setStatus(ctx, t, "", true); err != nil {
			a.logger.Warn("slack: clear the thread status", "request", id, "err", err)
		}
	}
	a.answered(ctx, t, id, ts, false)
	return ts, true, false, nil
}

// inFlight says whether a message of kind may still be on its way; any
// replica finds one in the thread (findDraft).
func inFlight(kind string) bool {
	return slices.Contains([]string{msgPlaceholder, msgPosted, postNext, msgStream}, kind)
}

// updateTo redraws message ts as the answer, at once as the stream's
// stop goes.
func (a *Adapter) updateTo(ctx context.Context, api *slackapi.Client, channel string, t board.Thread, ts string, ans answer) error {
	return a.unpaced(ctx, t.Channel.ID, func(ctx context.Context) error {
		opts := []slackapi.MsgOption{slackapi.MsgOptionText(ans.text, false), slackapi.MsgOptionBlocks(ans.blocks()...)}
		if ans.metadata != nil {
			opts = append(opts, slackapi.MsgOptionMetadata(*ans.metadata))
		}
		_, _, _, err := api.UpdateMessageContext(ctx, channel, ts, opts...)
		return err
	})
}

// replaceDraft posts the answer and deletes the draft message ts.
func (a *Adapter) replaceDraft(ctx context.Context, api *slackapi.Client, channel string, t board.Thread, ts string, ans answer) (string, error) {
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(ans.text, false), slackapi.MsgOptionBlocks(ans.blocks()...), slackapi.MsgOptionTS(t.ID)}
	if ans.metadata != nil {
		opts = append(opts, slackapi.MsgOptionMetadata(*ans.metadata))
	}
	_, posted, err := api.PostMessageContext(ctx, channel, opts...)
	if err != nil {
		return "", err
	}
	if err := deleteDraft(ctx, api, channel, ts); err != nil {
		a.logger.Warn("slack: delete the draft the answer replaced", "message", ts, "err", err)
	}
	return posted, nil
}

// deleteDraft deletes a draft or placeholder left beside its request's
// answer. A failed delete is tried again (whileAway): a draft left there
// reads as a second answer. One Slack no longer has counts as deleted.
func deleteDraft(ctx context.Context, api *slackapi.Client, channel, ts string) error {
	return whileAway(ctx, func() error {
		_, _, err := api.DeleteMessageContext(ctx, channel, ts)
		if se := (slackapi.SlackErrorResponse{}); errors.As(err, &se) && se.Err == "message_not_found" {
			return nil // gone already
		}
		return err
	})
}

// answered notes that request id's answer went out as message ts in t,
// for every replica: a status is not renewed any more, a placeholder
// posted late is taken away, a repost finds it. With sweep, the thread
// is looked at again later for a draft landing late (sweepLater); then,
// or now, the thread may stream another request's draft.
func (a *Adapter) answered(ctx context.Context, t board.Thread, id board.RequestID, ts string, sweep bool) {
	if id == "" {
		return
	}
	if sweep {
		defer a.sweepLater(ctx, t, id, ts)
	} else {
		defer a.releaseStream(ctx, t, id)
	}
	a.statuses.drop(id)
	// The first answer is the request's; a later reply naming it (a
	// note after a decision) is not.
	// Should Redis be away, it is waited for: a placeholder posted late
	// is taken away once it reads the answer.
	err := whileAway(ctx, func() error {
		_, _, err := a.memory.ShowingClaim(ctx, id, fieldAnswered, ts, nil, showingTTL)
		return err
	})
	if err != nil {
		a.logger.Warn("slack: note the answer", "request", id, "err", err)
	}
}

// answeredAs is the message request id's answer went out as, if it did.
func (a *Adapter) answeredAs(ctx context.Context, id board.RequestID) string {
	if id == "" {
		return ""
	}
	sh, err := a.memory.Showing(ctx, id)
	if err != nil {
		return ""
	}
	return sh[fieldAnswered]
}

// findDraft looks in t for request id's draft: the placeholder or posted
// draft its metadata names (conversations.replies with metadata), or
// with stream its unfinished stream; "" when there is none. Messages
// except names are not it. A failed look is tried once more: not finding
// a draft leaves it beside the answer.
func (a *Adapter) findDraft(ctx context.Context, t board.Thread, id board.RequestID, stream bool, except ...string) (string, error) {
	ts, err := a.lookForDraft(ctx, t, id, stream, except)
	if err != nil && sleep(ctx, 200*time.Millisecond) == nil {
		ts, err = a.lookForDraft(ctx, t, id, stream, except)
	}
	return ts, err
}

// lookForDraft is one look of findDraft's. A stream is the one message
// of a bot in t without metadata that opens as streamed drafts do: every
// other message BobNet posts in a request's thread carries metadata or
// opens otherwise, and while request id holds t's stream no other
// request's draft streams there. Two such messages are not told apart:
// neither is taken.
func (a *Adapter) lookForDraft(ctx context.Context, t board.Thread, id board.RequestID, stream bool, except []string) (string, error) {
	api, channel, err := a.web(ctx, t.Channel.ID)
	if err != nil {
		return "", err
	}
	msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slackapi.GetConversationRepliesParameters{
		ChannelID: channel, Timestamp: t.ID, Limit: 200, IncludeAllMetadata: true,
	})
	if err != nil {
		return "", fmt.Errorf("conversations.replies: %w", err)
	}
	var streams []string
	for _, m := range msgs {
		if slices.Contains(except, m.Timestamp) {
			continue
		}
		if m.Metadata.EventType == draftEvent && fmt.Sprint(m.Metadata.EventPayload["request_id"]) == string(id) {
			return m.Timestamp, nil
		}
		if stream && m.Metadata.EventType == "" && m.BotID != "" && opensAsStream(m) {
			streams = append(streams, m.Timestamp)
		}
	}
	if len(streams) > 1 {
		a.logger.Warn("slack: unfinished streams in the thread are not told apart; leaving them", "request", id, "messages", streams)
		return "", nil
	}
	if len(streams) == 1 {
		return streams[0], nil
	}
	return "", nil
}

// opensAsStream says whether m opens as a streamed draft, in its text or
// its blocks.
func opensAsStream(m slackapi.Message) bool {
	if strings.Contains(m.Text, draftOpening) {
		return true
	}
	b, err := json.Marshal(m.Blocks)
	return err == nil && strings.Contains(string(b), draftOpening)
}
