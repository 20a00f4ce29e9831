package bot

import (
	"errors"
	"fmt"

	"github.com/bobnet/bobnet/board"
)

// Errors the engine returns; check with errors.Is.
var (
	ErrNotFound    = errors.New("not found")
	ErrExpired     = errors.New("this proposal expired")
	ErrForbidden   = errors.New("not allowed")
	ErrRateLimited = errors.New("slow down")
	// ErrAlreadyDecided is matched by *DecidedError.
	ErrAlreadyDecided = errors.New("proposal already decided")
	// ErrUnavailable means Redis or Postgres is down; the user should try
	// again shortly.
	ErrUnavailable = errors.New("temporarily unavailable")
	// ErrNotHolder means a claim was given back or renewed by someone who
	// does not hold it (any more): it is left as it is.
	ErrNotHolder = errors.New("claim is not held by its caller")
)

// DecidedError says a proposal can no longer be approved or cancelled
// because it already was, naming its state and board.
type DecidedError struct {
	State   ProposalState
	By      string
	BoardID board.ID
	// Other is the version that replaced this one or was approved instead.
	Other ProposalID
}

func (e *DecidedError) Error() string {
	if e.Other != "" {
		return fmt.Sprintf("proposal already %s (by version %s)", e.State, e.Other)
	}
	if e.BoardID != "" {
		return fmt.Sprintf("proposal already %s (board %s)", e.State, e.BoardID)
	}
	return fmt.Sprintf("proposal already %s", e.State)
}

// Is makes errors.Is(err, ErrAlreadyDecided) true.
func (e *DecidedError) Is(target error) bool { return target == ErrAlreadyDecided }

// describe is an error as a sentence for a chat reply.
func describe(err error) string {
	var de *DecidedError
	switch {
	case errors.As(err, &de):
		return "it was already " + string(de.State) + "."
	case errors.Is(err, ErrExpired):
		return "it expired."
	case errors.Is(err, ErrForbidden):
		return "only the requester or an admin may do that."
	case errors.Is(err, ErrNotFound):
		return "it does not exist."
	case errors.Is(err, ErrUnavailable):
		return "a database is unavailable; try again in a minute."
	}
	return "something went wrong on my side; nothing was changed."
}
