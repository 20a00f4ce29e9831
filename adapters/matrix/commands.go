package matrix

import (
	"context"
	"errors"
	"html"
	"strings"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// command handles "!…": room commands (!bobnet …) and thread decisions.
func (a *Adapter) command(ctx context.Context, evt *event.Event, thread board.Thread, inThread bool, text string) {
	fields := strings.Fields(text)
	verb := strings.ToLower(fields[0])
	rest := strings.TrimSpace(strings.TrimPrefix(text, fields[0]))
	user := string(evt.Sender)
	room := evt.RoomID
	if verb == "!bobnet" {
		a.roomCommand(ctx, evt, thread, inThread, rest)
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
		a.notice(thread, board.Reply{Kind: board.ReplyInfo, Text: "Use " + verb + " as a reply in the thread of a preview."})
		return
	}
	p, err := a.store.MatrixThreadProposal(ctx, string(room), thread.ID)
	if errors.Is(err, board.ErrNotFound) {
		a.notice(thread, board.Reply{Kind: board.ReplyInfo, Text: "There is no proposal in this thread."})
		return
	}
	if err != nil {
		a.logger.Warn("matrix: find thread proposal", "room", room, "thread", thread.ID, "err", err)
		return
	}
	if act == "revise" && rest == "" {
		a.notice(thread, board.Reply{Kind: board.ReplyInfo, Text: "Say what to change: !revise make it weekly"})
		return
	}
	if !a.firstSeen(ctx, "command", evt.ID) {
		return
	}
	a.async(func(ctx context.Context) { a.decide(ctx, thread, act, p, user, rest) })
}

// roomCommand answers "!bobnet …" with bot's grammar (bot.Verbs): here
// the command's pills become person ids and the answer Matrix text. A
// command is answered once (the event id), off the sync loop; a plan is
// submitted on it, as a mention is.
func (a *Adapter) roomCommand(ctx context.Context, evt *event.Event, thread board.Thread, inThread bool, text string) {
	name, args, rest := bot.ParseCommand(text)
	if name == "assign" {
		args = assignArgs(args, evt.Content.AsMessage().FormattedBody)
	}
	c := bot.Command{Dialect: bot.MatrixDialect, Channel: thread.Channel, User: string(evt.Sender),
		Verb: name, Args: args, Text: rest, PublicURL: a.cfg.PublicURL, Logger: a.logger}
	v, ok := bot.Verbs.Lookup(name, false)
	switch {
	case !ok:
		a.notice(thread, board.Reply{Kind: board.ReplyInfo, Text: helpText()})
	case v.Name == "plan" && strings.EqualFold(rest, "this"):
		a.planThis(ctx, evt, thread, inThread) // planthis.go
	case v.Name == "plan":
		ans := bot.Verbs.Answer(ctx, a.eng, c) // only reads the words
		if ans.Act != bot.ActPlan {
			a.notice(thread, board.Reply{Kind: board.ReplyInfo, Text: ans.Text})
			return
		}
		a.submit(ctx, evt, thread, ans.Text)
	default:
		if !a.firstSeen(ctx, "command", evt.ID) {
			return
		}
		a.async(func(ctx context.Context) { a.answer(ctx, thread, c, bot.Verbs.Answer(ctx, a.eng, c)) })
	}
}

// answer posts a command's answer in the command's thread. A change
// names who made it (the room sees who moved what); a refusal is a short
// notice saying why.
func (a *Adapter) answer(ctx context.Context, thread board.Thread, c bot.Command, ans bot.CommandAnswer) {
	info := func(text string) { a.post(ctx, thread, board.Reply{Kind: board.ReplyInfo, Text: text}) }
	switch {
	case ans.Help:
		info(helpText())
	case ans.Err != nil:
		info(decisionText(ans.Err))
	case ans.Act == bot.ActLeave:
		info(ans.Text)
		a.leave(ctx, id.RoomID(thread.Channel.ID), "asked by "+c.User)
	case ans.Status != nil:
		a.status(ctx, thread, ans)
	case ans.Next != nil:
		a.post(ctx, thread, board.Reply{Kind: board.ReplyInfo, Text: bot.NextText(*ans.Next), BoardURL: board.BoardURL(a.cfg.PublicURL, ans.Next.Board.ID)})
	case ans.Update != nil && len(ans.Update.Changes) == 0:
		info(bot.CardUpdateText(*ans.Update, ""))
	case ans.Update != nil:
		up := *ans.Update
		a.post(ctx, thread, board.Reply{Kind: board.ReplyInfo, Text: bot.CardUpdateText(up, c.User),
			BoardURL: board.BoardURL(a.cfg.PublicURL, up.Board.ID) + "#" + string(up.Card.ID)})
	case ans.Policy != nil:
		info(bot.DescribePolicy(*ans.Policy))
	case ans.Told:
		// The board's thread, in this room, was told.
	case ans.Link.URL != "":
		info(ans.Text + ": " + ans.Link.URL)
	default:
		info(ans.Text)
	}
}

// status posts a board's status with its runs and budget lines.
func (a *Adapter) status(ctx context.Context, thread board.Thread, ans bot.CommandAnswer) {
	st := *ans.Status
	msg := renderStatus(st, board.BoardURL(a.cfg.PublicURL, st.Board.ID))
	if line := ans.RunsLine; line != "" {
		msg.Plain += "\n" + line
		msg.HTML += "<p>" + html.EscapeString(line) + "</p>"
	}
	if line := ans.BudgetLine; line != "" {
		msg.Plain += "\n" + line
		msg.HTML += "<p>" + line + "</p>"
	}
	if _, err := a.send(ctx, thread, msg); err != nil {
		a.logger.Warn("matrix: post status", "board", st.Board.ID, "err", err)
	}
}
