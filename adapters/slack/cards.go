package slack

import (
	"context"
	"errors"
	"regexp"
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
		text := bot.NextTextAs(st, escape, assigneeMention(board.TenantOf(st.Board.Channel))) + "\n<" + board.BoardURL(a.cfg.PublicURL, st.Board.ID) + "|Open the board>"
		return commandReply{ResponseType: "ephemeral", Text: text}
	case "move":
		card, status, ok := bot.SplitCardStatus(args)
		if !ok {
			return private("Say which card and where to: `/bobnet move NEWS-3 in progress`. Statuses: " + strings.Join(board.Statuses, ", ") + ".")
		}
		up, err = a.eng.MoveCard(ctx, ch, user, card, status)
	case "assign":
		card, who, ok := a.assignArgs(channel, args)
		if !ok {
			return private("Say which card and to whom: `/bobnet assign NEWS-3 @alice`, a profile (`/bobnet assign NEWS-3 Researcher`) or `none`.")
		}
		if strings.HasPrefix(who, "@") {
			return private("Slack sent me the name " + escape(who) + ", not the person, so I can't tell who it is; nothing changed. " +
				"Ask whoever manages this Slack app to turn on *Escape channels, users, and links* for /bobnet (it is on in BobNet's manifest).")
		}
		up, err = a.eng.AssignCard(ctx, ch, user, card, who)
	}
	if err != nil {
		return private(escape(bot.Explain(err)))
	}
	who := assigneeMention(board.TenantOf(ch.Key()))
	if len(up.Changes) == 0 {
		return private(bot.CardUpdateTextAs(up, "", escape, who))
	}
	a.cardChanged(ctx, up)
	text := strings.TrimSuffix(bot.CardUpdateTextAs(up, "", escape, who), ".") + " by <@" + escape(user) + ">. <" +
		board.BoardURL(a.cfg.PublicURL, up.Board.ID) + "#" + string(up.Card.ID) + "|Open the board>"
	return commandReply{ResponseType: "in_channel", Text: text}
}

// slackMention is a user mention at the end of a slash command's text, as
// Slack escapes it (<@U123> or <@U123|alice>).
var slackMention = regexp.MustCompile(`^(.*?)\s*<@([UW][A-Z0-9_]+)(?:\|[^>]*)?>$`)

// assignArgs splits `/bobnet assign`'s arguments into the card and whom
// to assign it to: a person mentioned at the end (<@U123|alice>) as their
// person id in the channel's installation, else the last word (a
// profile, none, or a name Slack did not turn into a mention).
func (a *Adapter) assignArgs(channel string, args []string) (card, who string, ok bool) {
	text := strings.Join(args, " ")
	if m := slackMention.FindStringSubmatch(text); m != nil {
		installation, _ := a.viewerUser(channel)
		return m[1], board.SlackPerson(installation, m[2]), m[1] != ""
	}
	if len(args) < 2 {
		return "", "", false
	}
	return strings.Join(args[:len(args)-1], " "), args[len(args)-1], true
}

// assigneeMention shows an assignee in Slack text about a board of tenant
// t: a person of t's installation as a mention (<@U123>), anyone else by
// their label, escaped, a role as it is, escaped.
func assigneeMention(t board.Tenant) func(string) string {
	return func(assignee string) string {
		if assignee == "" {
			return "Unassigned"
		}
		if p, ok := board.ParsePerson(assignee); ok && p.Platform == "slack" && p.Tenant() == t {
			return "<@" + escape(p.User) + ">"
		}
		return escape(board.AssigneeLabel(assignee))
	}
}
