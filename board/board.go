// Package board holds what BobNet's boards are made of, for every package
// that reads or changes them: boards, cards and their changes, proposals,
// policies, runs and schedules, the records the engine trades with its
// Redis store and its surfaces (requests, replies, pending proposals),
// the errors that say why a change was refused and the stores' sentinels,
// and every id with its parser and its minting. It holds no SQL
// and no HTTP: package store keeps these in Postgres, package web shows
// them to people.
package board

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/bobnet/bobnet/plan"
)

// Errors the store returns; check with errors.Is.
var (
	// ErrNotFound means no row matched.
	ErrNotFound = errors.New("not found")
	// ErrNoTargetBoard means a card or batch action had no board to land on.
	ErrNoTargetBoard = errors.New("channel has no current board")
)

// Execution is an approved plan to write. ProposalID makes it idempotent:
// executing the same proposal again returns the first result.
type Execution struct {
	ProposalID ProposalID
	// Chain names every version of one request (the first version's id;
	// empty means ProposalID): at most one version of a chain executes.
	Chain ProposalID
	// Audit is written in the same transaction as the board, with the
	// board's id filled in.
	Audit   []AuditEvent
	Channel string // channel key, e.g. "slack:C123" or "console:general"
	// Thread is the platform thread the plan was approved in; a board it
	// creates tells its Done and Blocked cards there.
	Thread      string
	RequestedBy string
	ApprovedBy  string
	Plan        plan.Envelope // validated and normalized
	// Events, when set, makes the decision's outbound events once the
	// board's id is known; they are written in the same transaction, so
	// the approval is never committed without them. A replay calls it
	// not: the first execution wrote them.
	Events func(ExecResult) ([]OutboundEvent, error)
}

// ExecResult is what an execution wrote (or, on replay, had written).
type ExecResult struct {
	BoardID  ID
	Replayed bool              // true when the proposal had already been executed
	CardIDs  map[string]CardID // temp id -> real id
	Cards    int
	Links    int
	// Updated counts the existing cards an update_card changed.
	Updated int
}

// Board is a board's own fields.
type Board struct {
	ID   ID     `json:"id"`
	Name string `json:"name"`
	Goal string `json:"goal"`
	// Key prefixes the handles of the board's cards: NEWS in NEWS-3.
	Key       string    `json:"key"`
	Channel   string    `json:"-"`
	Thread    string    `json:"-"`
	CreatedAt time.Time `json:"-"`
}

// Card is a card with the ids of the cards it depends on.
type Card struct {
	ID CardID `json:"id"`
	// Handle is the short name people use for the card: the board's key
	// and the card's number, such as NEWS-3.
	Handle string `json:"handle"`
	Number int    `json:"number"`
	// Version counts the changes made to the card; a change may name the
	// version it was based on to be refused if someone changed it since.
	Version            int      `json:"version"`
	BoardID            ID       `json:"-"`
	Title              string   `json:"title"`
	Body               string   `json:"body"`
	Assignee           string   `json:"assignee"`
	Status             string   `json:"status"`
	WorkspaceMode      string   `json:"workspace_mode"`
	AcceptanceCriteria []string `json:"acceptance_criteria"`
	SuggestedSkills    []string `json:"suggested_skills"`
	Notes              string   `json:"notes"`
	// CriteriaDone holds the indexes of the acceptance criteria marked done.
	CriteriaDone []int    `json:"criteria_done"`
	DependsOn    []CardID `json:"depends_on"`
}

// Status is the summary behind "/bobnet status": counts by status, the
// cards ready to start and the cards waiting on dependencies. Every surface
// uses these words: a card's status "Ready" is where it sits, "ready to
// start" means nothing it depends on is unfinished, and "waiting on
// dependencies" is the opposite, whatever its status (the status "Blocked"
// is a person's call, for reasons outside the board).
type Status struct {
	Board  Board          `json:"board"`
	Counts map[string]int `json:"counts"`
	// Ready are the cards not started (Backlog or Ready) whose
	// dependencies are all Done.
	Ready []Card `json:"ready_to_start"`
	// Waiting are the cards not Done that depend on a card not Done.
	Waiting []Card `json:"waiting_on_dependencies"`
}

// AuditEvent is one recorded decision or step.
type AuditEvent struct {
	ID         int64           `json:"id"`
	At         time.Time       `json:"at"`
	Actor      string          `json:"actor"`
	Action     string          `json:"action"` // e.g. "requested", "proposed", "approved", "cancelled", "expired", "superseded", "plan_failed"
	Channel    string          `json:"channel"`
	ProposalID ProposalID      `json:"proposal_id,omitempty"`
	BoardID    ID              `json:"board_id,omitempty"`
	Detail     json.RawMessage `json:"detail,omitempty"`
	// DedupeKey, when set, makes recording the event idempotent.
	DedupeKey string `json:"-"`
}
