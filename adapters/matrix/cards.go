package matrix

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// cardCommand answers `!bobnet move <card> <status>`, `!bobnet assign
// <card> <who>` (args as assignArgs made them) and `!bobnet next` in the command's thread, with the
// same words as Slack's /bobnet. A change names who made it (the room
// sees who moved what); a refusal is a short notice saying why.
func (a *Adapter) cardCommand(ctx context.Context, thread bot.Thread, sub, user string, args []string) {
	info := func(text string) { a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: text}) }
	var up board.CardUpdate
	var err error
	switch sub {
	case "next":
		st, err := a.eng.NextCards(ctx, thread.Channel)
		if errors.Is(err, bot.ErrNotFound) {
			info("This room has no board yet. Mention me with what you want planned, and approve the preview.")
			return
		}
		if err != nil {
			info(decisionText(err))
			return
		}
		a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: bot.NextText(st), BoardURL: board.BoardURL(a.cfg.PublicURL, st.Board.ID)})
		return
	case "move":
		card, status, ok := bot.SplitCardStatus(args)
		if !ok {
			info("Say which card and where to: !bobnet move NEWS-3 in progress. Statuses: " + strings.Join(board.Statuses, ", ") + ".")
			return
		}
		up, err = a.eng.MoveCard(ctx, thread.Channel, user, card, status)
	case "assign":
		if len(args) < 2 {
			info("Say which card and to whom: !bobnet assign NEWS-3 @alice:example.org, a profile (!bobnet assign NEWS-3 Researcher) or none.")
			return
		}
		up, err = a.eng.AssignCard(ctx, thread.Channel, user, strings.Join(args[:len(args)-1], " "), args[len(args)-1])
	default:
		return
	}
	if err != nil {
		info(bot.Explain(err))
		return
	}
	if len(up.Changes) == 0 {
		info(bot.CardUpdateText(up, ""))
		return
	}
	a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: bot.CardUpdateText(up, user),
		BoardURL: board.BoardURL(a.cfg.PublicURL, up.Board.ID) + "#" + string(up.Card.ID)})
}

// policyCommand answers `!bobnet policy`: who decides in this room, how
// many approvals a plan needs, and the model budget.
func (a *Adapter) policyCommand(ctx context.Context, thread bot.Thread) {
	var text string
	if in, err := a.eng.PolicyFor(ctx, thread.Channel); err != nil {
		text = decisionText(err)
	} else {
		text = bot.DescribePolicy(in)
	}
	a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: text})
}

// budgetLine is the room's model use today for !bobnet status, or ""
// when it cannot be read quickly. It holds only numbers and a time, so
// it needs no escaping.
func (a *Adapter) budgetLine(ctx context.Context, ch bot.Channel) string {
	// Not worth holding the status answer up for.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	b, err := a.eng.BudgetStatus(ctx, ch)
	if err != nil {
		a.logger.Warn("matrix: read model budget", "room", ch.ID, "err", err)
		return ""
	}
	if b.Limit <= 0 {
		return fmt.Sprintf("Model use today: %d tokens (no budget).", b.Used)
	}
	return fmt.Sprintf("Model use today: %d of %d tokens; resets %s.", b.Used, b.Limit, b.Resets.Format("15:04 UTC"))
}

// pillAtEnd is a user pill ending a message's HTML: a matrix.to link to a
// user id (perhaps percent-encoded) and the text shown for it.
var pillAtEnd = regexp.MustCompile(`<a href="https://matrix\.to/#/([^"?/]+)[^"]*">([^<]*)</a>\s*$`)

// assignArgs reads `!bobnet assign`'s arguments as the card and, last,
// whom to assign it to: a person as their person id (matrix:@alice:server)
// when the message ends with a user id or a pill (whose body text is the
// user's display name), else the last word as it is (a profile, none, or
// something the engine refuses). formatted is the message's HTML, if any.
func assignArgs(args []string, formatted string) []string {
	if m := pillAtEnd.FindStringSubmatch(formatted); m != nil {
		user, err := url.PathUnescape(m[1])
		shown := strings.Fields(html.UnescapeString(m[2]))
		if err == nil && board.MatrixUserID(user) && len(shown) > 0 && len(args) > len(shown) &&
			strings.Join(args[len(args)-len(shown):], " ") == strings.Join(shown, " ") {
			return append(args[:len(args)-len(shown):len(args)-len(shown)], board.MatrixPerson(user))
		}
	}
	if n := len(args); n >= 2 && board.MatrixUserID(args[n-1]) {
		return append(args[:n-1:n-1], board.MatrixPerson(args[n-1]))
	}
	return args
}
