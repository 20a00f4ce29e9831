package board

import "errors"

// More errors the store returns; check with errors.Is.
var (
	// ErrProposalClosed means the proposal was cancelled, expired or
	// superseded, so it must not be executed.
	ErrProposalClosed = errors.New("proposal is no longer pending")
	// ErrInvalidPlan means the plan cannot be executed as given (not a
	// propose_actions plan, or an action the store does not know).
	ErrInvalidPlan = errors.New("plan cannot be executed")
	// ErrUnavailable means Redis or Postgres is down; the user should try
	// again shortly.
	ErrUnavailable = errors.New("temporarily unavailable")
	// ErrNotHolder means a claim was given back or renewed by someone who
	// does not hold it (any more): it is left as it is.
	ErrNotHolder = errors.New("claim is not held by its caller")
)

// OtherVersionApprovedError says another version of the same request was
// approved already, so this one must not be executed. It matches
// ErrProposalClosed.
type OtherVersionApprovedError struct {
	ProposalID ProposalID // the approved version
}

func (e *OtherVersionApprovedError) Error() string {
	return "another version of this plan was approved: " + string(e.ProposalID)
}

// Is makes errors.Is(err, ErrProposalClosed) true.
func (e *OtherVersionApprovedError) Is(target error) bool { return target == ErrProposalClosed }
