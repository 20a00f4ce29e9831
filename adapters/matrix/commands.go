package matrix

import (
	"context"
	"errors"
	"html"
	"strings"

	"maunium.net/go/mautrix/event"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// command handles "!…": room commands (!bobnet …) and thread decisions.
func (a *Adapter) command(ctx context.Context, evt *event.Event, thread bot.Thread, inThread bool, text string) {
	fields := strings.Fields(text)
	verb := strings.ToLower(fields[0])
	rest := strings.TrimSpace(strings.TrimPrefix(text, fields[0]))
	user := string(evt.Sender)
	room := evt.RoomID
	if verb == "!bobnet" {
		sub := ""
		if len(fields) > 1 {
			sub = strings.ToLower(fields[1])
		}
		switch sub {
		case "plan":
			req := strings.TrimSpace(strings.TrimPrefix(rest, fields[1]))
			if strings.EqualFold(req, "this") {
				a.planThis(ctx, evt, thread, inThread) // planthis.go
				return
			}
			if req == "" {
				a.notice(thread, bot.Reply{Kind: bot.ReplyInfo, Text: "Say what to plan: !bobnet plan our product launch"})
				return
			}
			a.submit(ctx, evt, thread, req)
		case "status":
			if !a.firstSeen(ctx, "command", evt.ID) {
				return
			}
			arg := ""
			if len(fields) > 2 {
				arg = fields[2]
			}
			a.async(func(ctx context.Context) { a.status(ctx, thread, arg) })
		case "move", "assign", "next":
			if !a.firstSeen(ctx, "command", evt.ID) {
				return
			}
			args := fields[2:]
			if sub == "assign" {
				args = assignArgs(args, evt.Content.AsMessage().FormattedBody)
			}
			a.async(func(ctx context.Context) { a.cardCommand(ctx, thread, sub, user, args) })
		case "run", "runs", "accept", "sendback", "schedule":
			if !a.firstSeen(ctx, "command", evt.ID) {
				return
			}
			args := fields[2:]
			a.async(func(ctx context.Context) { a.runCommand(ctx, thread, sub, user, args) })
		case "policy":
			if !a.firstSeen(ctx, "command", evt.ID) {
				return
			}
			a.async(func(ctx context.Context) { a.policyCommand(ctx, thread) })
		case "leave":
			if !a.firstSeen(ctx, "command", evt.ID) {
				return
			}
			a.async(func(ctx context.Context) {
				a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: "Bye! Invite me again whenever you need a plan."})
				a.leave(ctx, room, "asked by "+user)
			})
		default:
			a.notice(thread, bot.Reply{Kind: bot.ReplyInfo, Text: helpText()})
		}
		return
	}
	var act string
	switch verb {
	case "!approve", "!cancel", "!revise", "!again", "!withdraw":
		act = verb[1:]
	default:
		return // another bot's command
	}
	if !inThread {
		a.notice(thread, bot.Reply{Kind: bot.ReplyInfo, Text: "Use " + verb + " as a reply in the thread of a preview."})
		return
	}
	p, err := a.store.MatrixThreadProposal(ctx, string(room), thread.ID)
	if errors.Is(err, board.ErrNotFound) {
		a.notice(thread, bot.Reply{Kind: bot.ReplyInfo, Text: "There is no proposal in this thread."})
		return
	}
	if err != nil {
		a.logger.Warn("matrix: find thread proposal", "room", room, "thread", thread.ID, "err", err)
		return
	}
	if act == "revise" && rest == "" {
		a.notice(thread, bot.Reply{Kind: bot.ReplyInfo, Text: "Say what to change: !revise make it weekly"})
		return
	}
	if !a.firstSeen(ctx, "command", evt.ID) {
		return
	}
	a.async(func(ctx context.Context) { a.decide(ctx, thread, act, p, user, rest) })
}

func (a *Adapter) status(ctx context.Context, thread bot.Thread, arg string) {
	var st board.Status
	var err error
	if arg == "" {
		st, err = a.eng.ChannelStatus(ctx, thread.Channel)
	} else {
		id, perr := board.ParseID(arg)
		if perr != nil {
			a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: "That is not a board id; board ids look like b_ followed by 26 letters and digits."})
			return
		}
		st, err = a.eng.BoardStatusIn(ctx, thread.Channel, id)
	}
	switch {
	case errors.Is(err, bot.ErrNotFound) && arg == "":
		a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: "This room has no board yet. Mention me with what you want planned, and approve the preview."})
		return
	case errors.Is(err, bot.ErrNotFound):
		a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: "There is no board with that id. Board ids are long and exact: check that the whole id was copied."})
		return
	case err != nil:
		a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: decisionText(err)})
		return
	}
	msg := renderStatus(st, board.BoardURL(a.cfg.PublicURL, st.Board.ID))
	if line := a.eng.RunsLine(ctx, st.Board); line != "" {
		msg.Plain += "\n" + line
		msg.HTML += "<p>" + html.EscapeString(line) + "</p>"
	}
	if arg == "" {
		if line := a.budgetLine(ctx, thread.Channel); line != "" {
			msg.Plain += "\n" + line
			msg.HTML += "<p>" + line + "</p>"
		}
	}
	if _, err := a.send(ctx, thread, msg); err != nil {
		a.logger.Warn("matrix: post status", "board", st.Board.ID, "err", err)
	}
}
