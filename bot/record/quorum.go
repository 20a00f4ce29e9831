package record

import (
	"fmt"

	"github.com/bobnet/bobnet/board"
)

// Quorum is the approval policy a proposal was made under, how many
// approvals it needs and who has approved so far. A later change of the
// channel's policy does not change it.
type Quorum struct {
	// Key is where the policy came from: the channel, "<source>:*",
	// "default" or "built-in".
	Key       string       `json:"key"`
	Policy    board.Policy `json:"policy"`
	Needed    int          `json:"needed"`
	Approvals []string     `json:"approvals"`
}

// Multi reports whether the proposal needs more than one approval; nil
// needs one.
func (q *Quorum) Multi() bool { return q != nil && q.Needed > 1 }

// BoardChange is one change a proposal would make to the channel's current
// board, against the board as it was when the proposal was made: a field
// of an existing card, or a new dependency.
type BoardChange struct {
	Card  string `json:"card"`  // handle, or temp id for a card the plan adds
	Title string `json:"title"` // the card's title now
	Field string `json:"field"` // status, assignee, title, body or depends_on
	From  string `json:"from"`
	To    string `json:"to"`
}

// String is the change as one line of a preview.
func (c BoardChange) String() string {
	switch c.Field {
	case "depends_on":
		return fmt.Sprintf("%s “%s” will wait on %s", c.Card, c.Title, c.To)
	case "body":
		return fmt.Sprintf("%s “%s”: description rewritten (%d → %d characters)", c.Card, c.Title, len([]rune(c.From)), len([]rune(c.To)))
	}
	return fmt.Sprintf("%s “%s”: %s %s → %s", c.Card, c.Title, c.Field, c.From, c.To)
}

// ReviewRef names a runner's card in Review in one run. It rides on the
// Reply that announces the card (Decision empty), so a poster can draw
// Accept / Send back controls beside the text, and on the Reply that says
// how its review ended (Decision set), so a poster can take its controls
// away. A poster that draws no controls shows Reply.Text alone, which says
// the commands.
type ReviewRef struct {
	Run    board.RunID  `json:"run_id"`
	Card   board.CardID `json:"card_id"`
	Handle string       `json:"handle"`
	// Round is how often the card had been sent back when it was
	// announced: controls of an earlier round decide nothing.
	Round int `json:"round"`
	// Decision is ReviewAccepted or ReviewSentBack once decided; By is
	// who decided and Reason why it was sent back.
	Decision string `json:"decision,omitempty"`
	By       string `json:"by,omitempty"`
	Reason   string `json:"reason,omitempty"`
}
