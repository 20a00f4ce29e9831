package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

const selectSuccessor = `SELECT id FROM proposals WHERE supersedes = $1 ORDER BY created_at DESC LIMIT 1`

// Successor returns the id of the proposal that supersedes id, or
// ErrNotFound when none does.
func (s *Store) Successor(ctx context.Context, id board.ProposalID) (board.ProposalID, error) {
	var next board.ProposalID
	err := s.pool.QueryRow(ctx, selectSuccessor, id).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("successor of %s: %w", id, board.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("successor of %s: %w", id, err)
	}
	return next, nil
}
