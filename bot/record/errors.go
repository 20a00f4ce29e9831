package record

import (
	"errors"

	"github.com/bobnet/bobnet/board"
)

// Errors a store reports; check with errors.Is. Package bot's errors of
// the same names are these.
var (
	// ErrNotFound is board.ErrNotFound: Redis and Postgres report a
	// missing row or key with the one error.
	ErrNotFound = board.ErrNotFound
	// ErrUnavailable means Redis or Postgres is down; the user should try
	// again shortly.
	ErrUnavailable = errors.New("temporarily unavailable")
	// ErrNotHolder means a claim was given back or renewed by someone who
	// does not hold it (any more): it is left as it is.
	ErrNotHolder = errors.New("claim is not held by its caller")
)
