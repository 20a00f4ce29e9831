package board

import (
	"fmt"
	"time"

	"github.com/bobnet/bobnet/plan"
)

// ProposalState is where a proposal is in its life.
type ProposalState string

// Proposal states.
const (
	ProposalPending    ProposalState = "pending"
	ProposalApproved   ProposalState = "approved"
	ProposalCancelled  ProposalState = "cancelled"
	ProposalExpired    ProposalState = "expired"
	ProposalSuperseded ProposalState = "superseded"
)

// Proposal is one version of a plan waiting for (or past) a decision.
type Proposal struct {
	// Reposting tells a poster that an earlier attempt to post this
	// preview may have gone out without being heard back (it timed out,
	// or the replica that made it died): a poster that can look for it
	// should, before posting again. Never stored.
	Reposting bool `json:"-"`

	ID          ProposalID    `json:"id"`
	Version     int           `json:"version"`              // 1, 2, 3… along a revision chain
	Supersedes  ProposalID    `json:"supersedes,omitempty"` // the previous version
	RequestID   RequestID     `json:"request_id"`
	Thread      Thread        `json:"thread"`
	RequestedBy string        `json:"requested_by"`
	Request     string        `json:"request"` // the text that asked for it
	Plan        plan.Envelope `json:"plan"`
	Warnings    []plan.Issue  `json:"warnings"`
	Changes     *Changes      `json:"changes,omitempty"` // against the previous version
	// BoardChanges are what the plan's update_card and add_links would do
	// to the current board, each with its value now and after.
	BoardChanges []BoardChange `json:"board_changes,omitempty"`
	State        ProposalState `json:"state"`
	CreatedAt    time.Time     `json:"created_at"`
	ExpiresAt    time.Time     `json:"expires_at"`
	DecidedBy    string        `json:"decided_by,omitempty"`
	DecidedAt    time.Time     `json:"decided_at,omitzero"`
	Reason       string        `json:"reason,omitempty"` // why it was cancelled, in its canceller's words
	BoardID      ID            `json:"board_id,omitempty"`
	BoardURL     string        `json:"board_url,omitempty"`
	TargetBoard  ID            `json:"target_board,omitempty"` // for card/batch actions
	Message      MessageRef    `json:"message,omitempty"`      // the posted preview
	// Chain is the id of the first version of this request's proposals
	// (empty for a first version): at most one version of a chain is ever
	// approved.
	Chain ProposalID `json:"chain,omitempty"`
	// Quorum is the approval policy in force when it was proposed and the
	// approvals so far; nil when the engine keeps no policies.
	Quorum *Quorum `json:"quorum,omitempty"`
	// Deciding says that a decision held the proposal's claim when it was
	// read from Redis: its state there may trail what Postgres committed.
	// It is never stored.
	Deciding bool `json:"-"`
	// ClaimHolder is who holds the claim ("approve:U123") when a claim
	// attempt found it held by another decision. It is never stored.
	ClaimHolder string `json:"-"`
}

// ChainID is the id naming every version of p's request.
func (p Proposal) ChainID() ProposalID {
	if p.Chain != "" {
		return p.Chain
	}
	return p.ID
}

// Changes is what a revision changed against the previous version. Cards are
// matched by temp id, then by title.
type Changes struct {
	Added        []string `json:"added"`      // card titles
	Removed      []string `json:"removed"`    // card titles
	Retitled     []Change `json:"retitled"`   // old title -> new title
	Reassigned   []Change `json:"reassigned"` // card title: old assignee -> new assignee
	LinksAdded   []string `json:"links_added"`
	LinksRemoved []string `json:"links_removed"`
	BoardChanged *Change  `json:"board_changed,omitempty"`
	// UpdatesAdded and UpdatesRemoved are changes to existing cards
	// (update_card, add_links) one version proposes and the other did not.
	UpdatesAdded   []string `json:"updates_added,omitempty"`
	UpdatesRemoved []string `json:"updates_removed,omitempty"`
}

// Change is one before/after pair; Subject names the card it is about.
type Change struct {
	Subject string `json:"subject,omitempty"`
	From    string `json:"from"`
	To      string `json:"to"`
}

// Approval is the result of a successful approve. State is pending when
// the approval was recorded but more are needed (Approvals so far, Needed
// in all); then there is no board yet.
type Approval struct {
	ProposalID ProposalID    `json:"proposal_id"`
	BoardID    ID            `json:"board_id"`
	BoardURL   string        `json:"board_url"`
	State      ProposalState `json:"state,omitempty"`
	Approvals  []string      `json:"approvals,omitempty"`
	Needed     int           `json:"needed,omitempty"`
}

// Empty reports whether nothing changed.
func (c *Changes) Empty() bool {
	return c == nil || (len(c.Added)+len(c.Removed)+len(c.Retitled)+len(c.Reassigned)+len(c.LinksAdded)+len(c.LinksRemoved)+
		len(c.UpdatesAdded)+len(c.UpdatesRemoved) == 0 && c.BoardChanged == nil)
}

// Summary is the changes in one line, such as "2 cards added, 1 removed".
func (c *Changes) Summary() string {
	if c.Empty() {
		return "no changes"
	}
	parts := []string{}
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(len(c.Added), "card added", "cards added")
	add(len(c.Removed), "removed", "removed")
	add(len(c.Retitled), "retitled", "retitled")
	add(len(c.Reassigned), "reassigned", "reassigned")
	add(len(c.LinksAdded), "link added", "links added")
	add(len(c.LinksRemoved), "link removed", "links removed")
	add(len(c.UpdatesAdded), "card change added", "card changes added")
	add(len(c.UpdatesRemoved), "card change dropped", "card changes dropped")
	if c.BoardChanged != nil {
		parts = append(parts, "board renamed")
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out += ", " + p
	}
	return out
}

// remindNum/remindDen is the share of a proposal's life after which it
// reminds its deciders: three quarters.
const remindNum, remindDen = 3, 4

// RemindAt is when a pending proposal reminds its deciders: three
// quarters of the way from its creation to its expiry. Zero when the
// proposal has no life to speak of.
func (p Proposal) RemindAt() time.Time {
	life := p.ExpiresAt.Sub(p.CreatedAt)
	if p.CreatedAt.IsZero() || life <= 0 {
		return time.Time{}
	}
	return p.CreatedAt.Add(life / remindDen * remindNum)
}

// Quorum is the approval policy a proposal was made under, how many
// approvals it needs and who has approved so far. A later change of the
// channel's policy does not change it.
type Quorum struct {
	// Key is where the policy came from: the channel, "<source>:*",
	// "default" or "built-in".
	Key       string   `json:"key"`
	Policy    Policy   `json:"policy"`
	Needed    int      `json:"needed"`
	Approvals []string `json:"approvals"`
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
