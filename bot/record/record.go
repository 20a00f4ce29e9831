// Package record holds the records BobNet's engine (package bot) trades
// with its stores and surfaces: requests and their admission, replies,
// proposals with their changes and quorum, and the errors a store
// reports. It imports no engine, planner client or network code, so a
// store (bot/pending, on Redis) can implement the engine's interfaces
// without them; package bot names each of these with an alias.
package record

import (
	"fmt"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
)

// RequestID identifies one request to the bot (a mention, a webhook, a
// console message, a revision). It is board's type, so ids cross between
// the engine and the board store without conversions.
type RequestID = board.RequestID

// ProposalID identifies one version of a proposed plan; it is board's type
// too.
type ProposalID = board.ProposalID

// Source names the surface a request came from.
type Source string

// The surfaces BobNet speaks on.
const (
	SourceSlack   Source = "slack"
	SourceMatrix  Source = "matrix"
	SourceConsole Source = "console"
)

// Channel is a conversation place on one surface.
type Channel struct {
	Source Source `json:"source"`
	ID     string `json:"id"`
}

// Key is the channel's name across surfaces, used for bindings, rate limits
// and audit: "slack:C123", "console:general".
func (c Channel) Key() string { return string(c.Source) + ":" + c.ID }

// Thread is where replies to a request go.
type Thread struct {
	Channel Channel `json:"channel"`
	// ID is the platform's thread id (Slack thread_ts, Matrix thread root
	// event id); empty means the thread is rooted at the request itself.
	ID string `json:"id"`
}

// MessageRef is the platform's id of a message the bot posted (Slack ts,
// Matrix event id), so the message can be updated later.
type MessageRef string

// Request is one thing someone asked the bot.
type Request struct {
	ID     RequestID `json:"id"`
	Thread Thread    `json:"thread"`
	User   string    `json:"user"` // platform user id
	// UserName is how to show the user; empty means use User.
	UserName string `json:"user_name,omitempty"`
	Text     string `json:"text"`
	// DedupeKey (e.g. a Slack event id or webhook delivery id) makes Submit
	// idempotent: a second request with the same key returns the first id.
	DedupeKey string `json:"dedupe_key,omitempty"`
	// Revises and Feedback are set for a revision of a proposal.
	Revises  ProposalID `json:"revises,omitempty"`
	Feedback string     `json:"feedback,omitempty"`
	// Again is set when an expired proposal is proposed again.
	Again ProposalID `json:"again,omitempty"`
	// Quoted are chat messages the request is about ("Plan this"), shown
	// to the model as fenced thread history, never as the instruction.
	Quoted []plan.Turn `json:"quoted,omitempty"`
	// Via is the credential the request came through (a token, a hook
	// delivery), for the audit log; Submit takes it from the context.
	Via string `json:"via,omitempty"`
	// Webhook names the webhook delivery the request came from; the worker
	// records it in Postgres when it takes the request, and closes a
	// delivery seen there before as a duplicate.
	Webhook    *HookOrigin `json:"webhook,omitempty"`
	ReceivedAt time.Time   `json:"received_at"`
}

// HookOrigin is the webhook delivery a request came from: the hook's name
// and the sender's id of the delivery.
type HookOrigin struct {
	Hook string `json:"hook"`
	ID   string `json:"id"`
}

// RequestState is where a request is in its life.
type RequestState string

// Request states, as the REST API shows them.
const (
	RequestQueued   RequestState = "queued"
	RequestPlanning RequestState = "planning"
	RequestDone     RequestState = "done"
	RequestFailed   RequestState = "failed"
)

// ReplyKind says what kind of text reply the bot gave.
type ReplyKind string

// Reply kinds: the planner's three text kinds plus the bot's own.
const (
	ReplyAnswer   ReplyKind = "answer"
	ReplyClarify  ReplyKind = "clarify"
	ReplyRefuse   ReplyKind = "refuse"
	ReplyError    ReplyKind = "error" // friendly error: model unreachable, invalid output…
	ReplySlowDown ReplyKind = "slow_down"
	ReplyProposal ReplyKind = "proposal" // a preview was posted
	ReplyInfo     ReplyKind = "info"     // audit lines, board links, help
)

// Reply is a text message in a thread. Text is plain text written by the
// bot or the model; posters escape it for their surface.
type Reply struct {
	Kind ReplyKind `json:"kind"`
	Text string    `json:"text"`
	// Questions are the model's clarifying questions, if any.
	Questions []string `json:"questions,omitempty"`
	// BoardURL is set on the reply that announces a created board.
	BoardURL string     `json:"board_url,omitempty"`
	Review   *ReviewRef `json:"review,omitempty"` // a run's card under review, for posters' controls
}

// RequestStatus is what GET /api/v1/requests/{id} shows.
type RequestStatus struct {
	ID         RequestID    `json:"id"`
	State      RequestState `json:"state"`
	Reply      *Reply       `json:"reply,omitempty"`
	ProposalID ProposalID   `json:"proposal_id,omitempty"`
	Error      string       `json:"error,omitempty"`
	// DuplicateOf is set on a webhook redelivery closed by its worker: the
	// request the delivery started the first time.
	DuplicateOf RequestID `json:"duplicate_of,omitempty"`
}

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
	BoardID      board.ID      `json:"board_id,omitempty"`
	BoardURL     string        `json:"board_url,omitempty"`
	TargetBoard  board.ID      `json:"target_board,omitempty"` // for card/batch actions
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
	BoardID    board.ID      `json:"board_id"`
	BoardURL   string        `json:"board_url"`
	State      ProposalState `json:"state,omitempty"`
	Approvals  []string      `json:"approvals,omitempty"`
	Needed     int           `json:"needed,omitempty"`
}

// RequestRecord is a request with where it stands, as the request store
// keeps it.
type RequestRecord struct {
	Request Request       `json:"request"`
	Status  RequestStatus `json:"status"`
	// Taken is set once a worker has recorded the request as taken, so a
	// worker that takes it again after a crash does not start over.
	Taken bool `json:"taken,omitempty"`
	// Answer is the planned answer, kept until it is posted: a request
	// whose answer was planned but never posted is answered after a
	// restart without asking the model again.
	Answer *Answer `json:"answer,omitempty"`
}

// Answer is what the bot will say to a request: a text reply or the
// preview of a proposal. Failure is set when the request failed.
type Answer struct {
	Reply      *Reply     `json:"reply,omitempty"`
	ProposalID ProposalID `json:"proposal_id,omitempty"`
	Failure    string     `json:"failure,omitempty"`
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
