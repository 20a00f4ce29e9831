package matrix

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// planThis answers `!bobnet plan this` sent as a reply in a thread: the
// thread's root and its latest replies (the relations API, newest first)
// become a request of the person who asked, quoted to the model as data,
// and the preview goes into that thread. The thread is read off the sync
// loop.
func (a *Adapter) planThis(ctx context.Context, evt *event.Event, thread board.Thread, inThread bool) {
	if !inThread {
		a.notice(thread, board.Reply{Kind: board.ReplyInfo, Text: "Send !bobnet plan this as a reply in the thread you want planned."})
		return
	}
	if !a.firstSeen(ctx, "command", evt.ID) {
		return
	}
	a.async(func(ctx context.Context) {
		msgs, err := a.threadMessages(ctx, evt.RoomID, id.EventID(thread.ID), evt.ID)
		if err != nil {
			a.logger.Warn("matrix: read the thread to plan", "room", evt.RoomID, "thread", thread.ID, "err", err)
			a.post(ctx, thread, board.Reply{Kind: board.ReplyError, Text: "I can't read this thread, so there is nothing to plan from. Mention me with what to plan instead."})
			return
		}
		if len(msgs) == 0 {
			a.post(ctx, thread, board.Reply{Kind: board.ReplyInfo, Text: "I found no messages in this thread to plan from."})
			return
		}
		_, err = a.eng.Submit(ctx, board.Request{
			Thread: thread, User: string(evt.Sender), Text: bot.PlanThisText, Quoted: bot.QuoteThread(msgs),
			DedupeKey: "matrix:" + string(evt.ID), ReceivedAt: time.UnixMilli(evt.Timestamp),
		})
		if err != nil && !errors.Is(err, bot.ErrRateLimited) {
			a.logger.Warn("matrix: submit plan this", "event", evt.ID, "err", err)
			a.post(ctx, thread, board.Reply{Kind: board.ReplyError, Text: decisionText(err)})
		}
	})
}

// threadMessages reads a thread: its root (GET /event) and its latest
// bot.MaxThreadReplies replies (GET /relations/{root}/m.thread), oldest
// first, leaving out the bot's own messages and the command itself.
// Encrypted events are decrypted with the bot's keys when it has them.
func (a *Adapter) threadMessages(ctx context.Context, room id.RoomID, root, command id.EventID) ([]bot.ThreadMessage, error) {
	var first *event.Event
	if err := a.call(ctx, "read thread root", func(ctx context.Context) error {
		var err error
		first, err = a.cli.GetEvent(ctx, room, root)
		return err
	}); err != nil {
		return nil, fmt.Errorf("thread root: %w", err)
	}
	var rel *mautrix.RespGetRelations
	if err := a.call(ctx, "read thread", func(ctx context.Context) error {
		var err error
		rel, err = a.cli.GetRelations(ctx, room, root, &mautrix.ReqGetRelations{
			RelationType: event.RelThread, Dir: mautrix.DirectionBackward, Limit: bot.MaxThreadReplies + 1,
		})
		return err
	}); err != nil {
		return nil, fmt.Errorf("thread replies: %w", err)
	}
	replies := slices.Clone(rel.Chunk)
	slices.Reverse(replies) // newest first as listed
	var out []bot.ThreadMessage
	for _, e := range append([]*event.Event{first}, replies...) {
		if e == nil || e.ID == command || e.Sender == a.cfg.UserID {
			continue
		}
		if m, ok := a.messageOf(ctx, e); ok {
			out = append(out, m)
		}
	}
	if len(out) > bot.MaxThreadReplies+1 {
		out = append(out[:1], out[len(out)-bot.MaxThreadReplies:]...)
	}
	return out, nil
}

// messageOf is the text of a message event fetched from the homeserver,
// decrypted first when it is encrypted and the bot can.
func (a *Adapter) messageOf(ctx context.Context, e *event.Event) (bot.ThreadMessage, bool) {
	if e.Type == event.EventEncrypted {
		if a.cli.Crypto == nil {
			return bot.ThreadMessage{}, false
		}
		if err := e.Content.ParseRaw(e.Type); err != nil {
			return bot.ThreadMessage{}, false
		}
		dec, err := a.cli.Crypto.Decrypt(ctx, e)
		if err != nil {
			a.logger.Debug("matrix: a thread message could not be decrypted", "event", e.ID, "err", err)
			return bot.ThreadMessage{}, false
		}
		e = dec
	}
	if e.Type != event.EventMessage {
		return bot.ThreadMessage{}, false
	}
	if e.Content.Parsed == nil {
		if err := e.Content.ParseRaw(e.Type); err != nil {
			return bot.ThreadMessage{}, false
		}
	}
	c := e.Content.AsMessage()
	if c.MsgType != event.MsgText && c.MsgType != event.MsgEmote && c.MsgType != event.MsgNotice {
		return bot.ThreadMessage{}, false
	}
	if c.RelatesTo != nil && c.RelatesTo.Type == event.RelReplace {
		return bot.ThreadMessage{}, false // an edit: the original is in the thread
	}
	text := strings.TrimSpace(replyFallback.get().ReplaceAllString(c.Body, ""))
	return bot.ThreadMessage{User: string(e.Sender), Text: text}, text != ""
}
