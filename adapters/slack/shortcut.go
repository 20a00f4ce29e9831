package slack

import (
	"context"
	"errors"
	"fmt"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// planThisCallback is the callback id of the message shortcut "Plan this
// with BobNet" (deploy/slack/manifest.yaml).
const planThisCallback = "plan_this"

// maxThreadPages bounds the conversations.replies pages one shortcut
// reads (200 messages each) to find a long thread's latest replies.
const maxThreadPages = 10

// interaction handles the interactions that are not a channel message's
// buttons: the "Plan this" shortcut and the buttons of the App Home. It
// reports whether it took cb. Shared by HTTP and Socket Mode; like every
// other interaction it only starts work, which finishes after the ack.
func (a *Adapter) interaction(ctx context.Context, cb slackapi.InteractionCallback) bool {
	switch {
	case cb.Type == slackapi.InteractionTypeMessageAction:
		if cb.CallbackID == planThisCallback {
			a.planThis(cb)
		}
		return true
	case cb.Type == slackapi.InteractionTypeBlockActions && cb.View.Type == slackapi.VTHomeTab:
		a.homeActions(ctx, cb)
		return true
	}
	return false
}

// planThis makes the shortcut's message and its thread a request of the
// person who used the shortcut, answered in that thread. The thread is
// read after the ack (Slack wants one within 3 s); each message is quoted
// to the model as data, never as the request.
func (a *Adapter) planThis(cb slackapi.InteractionCallback) {
	user, channel := cb.User.ID, a.callbackChannel(cb)
	root := cb.Message.ThreadTimestamp
	if root == "" {
		root = cb.Message.Timestamp
	}
	if root == "" {
		root = cb.MessageTs
	}
	if user == "" || channel == "" || root == "" {
		a.logger.Warn("slack shortcut without user, channel or message", "callback", cb.CallbackID)
		return
	}
	key := cb.TriggerID
	if key == "" {
		key = cb.ActionTs
	}
	a.afterAck("plan this", func(ctx context.Context) {
		msgs, err := a.threadMessages(ctx, channel, root)
		if err != nil {
			a.logger.Warn("read the thread of a shortcut", "channel", channel, "thread", root, "err", err)
			a.ephemeral(ctx, channel, root, user, "I can't read this conversation; invite me first (`/invite @BobNet`), then try again.")
			return
		}
		if len(msgs) == 0 {
			// The message itself is all there is (conversations.replies
			// answered nothing for it).
			msgs = []bot.ThreadMessage{{User: cb.Message.User, Text: cb.Message.Text}}
		}
		t := board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: channel}, ID: root}
		r := board.Request{Thread: t, User: user, Text: bot.PlanThisText, Quoted: bot.QuoteThread(msgs)}
		if key != "" {
			r.DedupeKey = "slack-shortcut:" + key
		}
		if _, err := a.eng.Submit(ctx, r); err != nil {
			if !errors.Is(err, bot.ErrRateLimited) {
				a.ephemeral(ctx, channel, root, user, decisionText(err))
			}
			return
		}
		a.ephemeral(ctx, channel, root, user, "On it — the preview will appear in this thread.")
	})
}

// threadMessages reads a thread (conversations.replies): its first
// message and its latest bot.MaxThreadReplies replies, oldest first, each
// with who wrote it.
func (a *Adapter) threadMessages(ctx context.Context, channel, root string) ([]bot.ThreadMessage, error) {
	var first *bot.ThreadMessage
	var replies []bot.ThreadMessage
	api, id, err := a.web(ctx, channel)
	if err != nil {
		return nil, err
	}
	cursor := ""
	for range maxThreadPages {
		page, more, next, err := api.GetConversationRepliesContext(ctx, &slackapi.GetConversationRepliesParameters{
			ChannelID: id, Timestamp: root, Cursor: cursor, Limit: 200,
		})
		if err != nil {
			return nil, fmt.Errorf("conversations.replies: %w", err)
		}
		for _, m := range page {
			tm := bot.ThreadMessage{User: author(m), Text: m.Text}
			if m.Timestamp == root {
				first = &tm
				continue
			}
			replies = append(replies, tm)
			if len(replies) > bot.MaxThreadReplies {
				replies = replies[1:]
			}
		}
		if !more || next == "" {
			break
		}
		cursor = next
	}
	if first == nil {
		return replies, nil
	}
	return append([]bot.ThreadMessage{*first}, replies...), nil
}

// author names who wrote a message, for the model: the user id, or a
// bot's name.
func author(m slackapi.Message) string {
	switch {
	case m.User != "":
		return m.User
	case m.Username != "":
		return m.Username + " (bot)"
	case m.BotID != "":
		return m.BotID + " (bot)"
	}
	return ""
}
