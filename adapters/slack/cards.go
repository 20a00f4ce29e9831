package slack

import (
	"context"
	"errors"
	"strings"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// cardCommand answers `/bobnet move <card> <status>`, `/bobnet assign
// <card> <profile>` and `/bobnet next`. A change is announced in the
// channel (the team sees who moved what); a refusal only to the person who
// asked.
func (a *Adapter) cardCommand(ctx context.Context, sub, channel, user string, args []string) commandReply {
	ch := bot.Channel{Source: bot.SourceSlack, ID: channel}
	private := func(text string) commandReply { return commandReply{ResponseType: "ephemeral", Text: text} }
	var up board.CardUpdate
	var err error
	switch sub {
	case "next":
		st, err := a.eng.NextCards(ctx, ch)
		if errors.Is(err, bot.ErrNotFound) {
			return private("This channel has no board yet. Mention me with what you want planned, and approve the preview.")
		}
		if err != nil {
			return private(decisionText(err))
		}
		text := escape(bot.NextText(st)) + "\n<" + board.BoardURL(a.cfg.PublicURL, st.Board.ID) + "|Open the board>"
		return commandReply{ResponseType: "ephemeral", Text: text}
	case "move":
		card, status, ok := bot.SplitCardStatus(args)
		if !ok {
			return private("Say which card and where to: `/bobnet move NEWS-3 in progress`. Statuses: " + strings.Join(board.Statuses, ", ") + ".")
		}
		up, err = a.eng.MoveCard(ctx, ch, user, card, status)
	case "assign":
		if len(args) < 2 {
			return private("Say which card and to whom: `/bobnet assign NEWS-3 Researcher` (or `none`).")
		}
		up, err = a.eng.AssignCard(ctx, ch, user, strings.Join(args[:len(args)-1], " "), args[len(args)-1])
	}
	if err != nil {
		return private(escape(bot.Explain(err)))
	}
	if len(up.Changes) == 0 {
		return private(escape(bot.CardUpdateText(up, "")))
	}
	a.cardChanged(ctx, up)
	text := strings.TrimSuffix(escape(bot.CardUpdateText(up, "")), ".") + " by <@" + escape(user) + ">. <" +
		board.BoardURL(a.cfg.PublicURL, up.Board.ID) + "#" + string(up.Card.ID) + "|Open the board>"
	return commandReply{ResponseType: "in_channel", Text: text}
}
