package bot

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
)

// The chat command grammar: a surface turns its platform's event into a
// Command (who, where, the verb and its words, people already as person
// ids), Grammar.Answer parses and checks it and calls the engine, and the
// surface renders the CommandAnswer in its own markup. Parsing, argument checks,
// usage and error texts live here once, so a verb added to Verbs is
// answered, and listed in help, on every surface.

// Dialect is how a surface writes its commands.
type Dialect struct {
	// Prefix starts a command: "/bobnet " in Slack and the console,
	// "!bobnet " in Matrix.
	Prefix string
	// Ticks: examples of commands are written in backticks (Slack
	// mrkdwn); without, backticks are left out of command texts.
	Ticks bool
	// Place is what the surface calls a channel: "channel" or "room".
	Place string
	// Person is how an example person is written for assign
	// ("@alice"); "" where people are not named in commands.
	Person string
	// MatrixVerbs: the surface answers the Matrix-only verbs.
	MatrixVerbs bool
	// BudgetAlways: the model budget line goes with every status answer,
	// also with no board and for another board by its id; without, only
	// with the status of the channel's own board.
	BudgetAlways bool
	// BudgetWait is how long a status answer waits for the budget line.
	BudgetWait time.Duration
}

// The surfaces' dialects.
var (
	SlackDialect   = Dialect{Prefix: "/bobnet ", Ticks: true, Place: "channel", Person: "@alice", BudgetAlways: true, BudgetWait: time.Second}
	MatrixDialect  = Dialect{Prefix: "!bobnet ", Place: "room", Person: "@alice:example.org", MatrixVerbs: true, BudgetWait: 2 * time.Second}
	ConsoleDialect = Dialect{Prefix: "/bobnet ", Place: "channel", BudgetWait: 2 * time.Second}
)

// code writes an example command in the dialect.
func (d Dialect) code(s string) string {
	if d.Ticks {
		return "`" + s + "`"
	}
	return s
}

// text is a text of the engine's with its backticks as the dialect writes
// them.
func (d Dialect) text(s string) string {
	if d.Ticks {
		return s
	}
	return strings.ReplaceAll(s, "`", "")
}

// Command is one chat command as a surface read it.
type Command struct {
	Dialect Dialect
	Channel board.Channel
	User    string
	// Verb is the command's first word, as typed; Args are the words
	// after it (people as person ids), Text all of it after the verb.
	Verb string
	Args []string
	Text string
	// PublicURL is where BobNet's pages are, for links.
	PublicURL string
	// Once, when set, tells whether the command is seen for the first
	// time: a verb that starts something does nothing on a replay.
	Once   func(ctx context.Context) (bool, error)
	Logger *slog.Logger
}

// ParseCommand reads the words after the prefix ("status b_…") into a
// command's verb, its arguments and the text after the verb.
func ParseCommand(text string) (verb string, args []string, rest string) {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return "", nil, ""
	}
	return strings.ToLower(fields[0]), fields[1:], strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), fields[0]))
}

// CommandAnswer is what a command answers, for the surface to render. Exactly
// one of its kinds is set; with none, Text (words, not markup) is it.
type CommandAnswer struct {
	Text string
	// Link follows Text, when set.
	Link Link
	// Err is a refusal or a failure, in the engine's words (Explain).
	Err error
	// Help: the verb is not one the surface answers; show its help.
	Help bool
	// Act is a verb the surface carries out itself: ActPlan (Text is
	// the request) or ActLeave (Text is the goodbye).
	Act string
	// Status is a board's status, with its runs and budget lines ("" for
	// none). With no Status, BudgetLine goes after Text.
	Status     *board.Status
	RunsLine   string
	BudgetLine string
	// Next is a board whose ready cards are listed.
	Next *board.Status
	// Update is a card changed (or left as it was: no Changes).
	Update *board.CardUpdate
	// Policy is the policy in force.
	Policy *board.PolicyInForce
	// Told: Text repeats what the board's thread was told; a surface
	// without private answers leaves it out.
	Told bool
}

// The acts a surface carries out itself.
const (
	ActPlan  = "plan"
	ActLeave = "leave"
)

// Link is a link of an answer.
type Link struct {
	URL   string
	Label string
}

// Answer parses and answers c with the verb of the table it names; a
// word that is no verb of the surface's is answered with help.
func (g Grammar) Answer(ctx context.Context, s Surface, c Command) CommandAnswer {
	v, ok := g.Lookup(c.Verb, false)
	if !ok || v.Do == nil || (v.MatrixOnly && !c.Dialect.MatrixVerbs) {
		return CommandAnswer{Help: true}
	}
	c.Verb = v.Name
	return v.Do(ctx, s, c)
}

// Command answers a chat command with the table of Verbs.
func (e *Engine) Command(ctx context.Context, c Command) CommandAnswer {
	return Verbs.Answer(ctx, e, c)
}

// noBoardText is the answer in a channel (or room) without a board.
func noBoardText(place string) string {
	return "This " + place + " has no board yet. Mention me with what you want planned, and approve the preview."
}

// BudgetLine says a channel's model use today. It holds only numbers and
// a time, so it needs no escaping.
func BudgetLine(b Budget) string {
	if b.Limit <= 0 {
		return fmt.Sprintf("Model use today: %d tokens (no budget).", b.Used)
	}
	return fmt.Sprintf("Model use today: %d of %d tokens; resets %s.", b.Used, b.Limit, b.Resets.Format("15:04 UTC"))
}

// budgetLine is the channel's budget line, or "" when it cannot be read
// within the dialect's wait: not worth holding the status answer up for.
func budgetLine(ctx context.Context, s Surface, c Command) string {
	ctx, cancel := context.WithTimeout(ctx, c.Dialect.BudgetWait)
	defer cancel()
	b, err := s.BudgetStatus(ctx, c.Channel)
	if err != nil {
		if c.Logger != nil {
			c.Logger.Warn("read model budget", "channel", c.Channel.Key(), "err", err)
		}
		return ""
	}
	return BudgetLine(b)
}
