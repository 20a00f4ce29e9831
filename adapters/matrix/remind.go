package matrix

import (
	"context"
	"html"
	"strings"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// cancelReason is the reason of "!cancel because the budget moved": what
// follows the command, without a leading "because".
func cancelReason(rest string) string {
	rest = strings.TrimSpace(rest)
	if word, after, ok := strings.Cut(rest, " "); ok && strings.EqualFold(word, "because") {
		return strings.TrimSpace(after)
	}
	if strings.EqualFold(rest, "because") {
		return ""
	}
	return rest
}

// reasonSuffix is ": <reason>" for a cancelled proposal with a reason,
// made inert like any text people wrote.
func reasonSuffix(p board.Proposal) string {
	if p.Reason == "" {
		return ""
	}
	return ": " + inert(p.Reason)
}

// Remind mentions the proposal's deciders in its thread: each decider
// who is a Matrix user is named with a pill and listed in m.mentions, so
// their clients notify them. Power-level deciders are not expanded (see
// bot.Reminder).
func (a *Adapter) Remind(ctx context.Context, r bot.Reminder) error {
	msg, users := renderReminder(r)
	c := content(r.Proposal.Thread, msg)
	c.Mentions = &event.Mentions{UserIDs: users}
	room := id.RoomID(r.Proposal.Thread.Channel.ID)
	return a.call(ctx, "send reminder", func(ctx context.Context) error {
		_, err := a.cli.SendMessageEvent(ctx, room, event.EventMessage, c)
		return err
	})
}

// renderReminder draws a reminder and returns the Matrix users it
// mentions.
func renderReminder(r bot.Reminder) (message, []id.UserID) {
	var users []id.UserID
	var plain, pills []string
	for _, d := range r.Deciders {
		u := id.UserID(d)
		if _, _, err := u.Parse(); err != nil || !strings.HasPrefix(d, "@") {
			continue
		}
		users = append(users, u)
		plain = append(plain, d)
		pills = append(pills, `<a href="`+html.EscapeString(u.URI().MatrixToURL())+`">`+html.EscapeString(d)+`</a>`)
	}
	title := inert(r.Title())
	left := bot.LeftText(r.Left)
	lead, leadHTML := "⏰ Reminder", "⏰ Reminder"
	if len(users) > 0 {
		lead += " for " + strings.Join(plain, ", ")
		leadHTML += " for " + strings.Join(pills, ", ")
	}
	tail := " is still waiting for a decision and expires in " + left + ". Reply !approve, !revise <what to change> or !cancel [because …] in this thread."
	return message{
		Plain: lead + ": “" + title + "”" + tail,
		HTML:  leadHTML + ": “<b>" + html.EscapeString(title) + "</b>”" + html.EscapeString(tail),
	}, users
}
