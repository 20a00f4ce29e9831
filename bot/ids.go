// Package bot is BobNet's engine: a request becomes a plan, a plan becomes a
// proposal, and a proposal is approved, revised, cancelled or left to expire.
// It declares the small interfaces it consumes (planner, board store,
// proposal store, queue, poster) and knows nothing of Slack or Matrix.
package bot

import (
	"fmt"

	"github.com/bobnet/bobnet/board"
)

// ParseProposalID checks that text from outside (a button's value, a URL)
// is shaped like a proposal id. A malformed one names no proposal: its
// error matches ErrNotFound, as an unknown proposal's does, and
// board.ErrMalformedID.
func ParseProposalID(s string) (board.ProposalID, error) {
	id, err := board.ParseProposalID(s)
	if err != nil {
		return "", fmt.Errorf("%w: %w", err, ErrNoProposal)
	}
	return id, nil
}

// ParseRequestID is ParseProposalID for request ids.
func ParseRequestID(s string) (board.RequestID, error) {
	id, err := board.ParseRequestID(s)
	if err != nil {
		return "", fmt.Errorf("%w: %w", err, ErrNotFound)
	}
	return id, nil
}
