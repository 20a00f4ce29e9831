package board

import (
	"encoding/json"
	"errors"
	"time"
)

// ProposalRecord is a proposal's history in Postgres.
type ProposalRecord struct {
	ID ProposalID
	// Chain is the id of the first version of the request's proposals;
	// empty means ID.
	Chain       ProposalID
	Channel     string
	Version     int
	Supersedes  ProposalID
	RequestedBy string
	State       string
	Plan        json.RawMessage
	DecidedBy   string
	BoardID     ID
	CreatedAt   time.Time
	ExpiresAt   time.Time
	DecidedAt   time.Time
	// Policy is the approval policy in force when the proposal was made
	// (JSON, as the engine wrote it); nil when none was recorded.
	Policy json.RawMessage
	// Events are outbound events SetProposalState writes in the same
	// transaction as the state, so a crash between the two loses neither.
	Events []OutboundEvent `json:"-"`
}

// ErrProposalExists means a proposal with that id was saved before. The
// first plan saved under an id is kept: it may have been previewed, and
// what people approve must be what they saw.
var ErrProposalExists = errors.New("proposal already saved")
