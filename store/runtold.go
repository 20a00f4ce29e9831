package store

import (
	"context"
	"fmt"
	"time"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

// RetellRunEndAfter is how long after a run's end another replica tells
// its thread when the one that ended it has not said it was told: longer
// than a post's tries take, so the news is said once unless its replica
// died.
const RetellRunEndAfter = 40 * time.Second

const (
	// claimUntoldRunEnds takes up to $2 ended runs whose end is not told
	// and is due, and puts their next try RetellRunEndAfter ahead, so one
	// replica tells each.
	claimUntoldRunEnds = `UPDATE runs SET end_tell_after = now() + $1::interval
WHERE id IN (SELECT id FROM runs WHERE state <> 'running' AND end_told_at IS NULL AND end_tell_after < now()
    ORDER BY end_tell_after LIMIT $2 FOR UPDATE SKIP LOCKED)
RETURNING id`
	markRunEndTold = `UPDATE runs SET end_told_at = now() WHERE id = $1 AND end_told_at IS NULL`
)

// UntoldRunEnds returns up to limit runs that ended more than
// RetellRunEndAfter ago without their thread being told (their replica
// died in between, or the chat platform refused every try), each to one
// caller until RetellRunEndAfter has passed again.
func (s *Store) UntoldRunEnds(ctx context.Context, limit int) ([]board.Run, error) {
	rows, _ := s.pool.Query(ctx, claimUntoldRunEnds, RetellRunEndAfter, limit)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[board.RunID])
	if err != nil {
		return nil, fmt.Errorf("untold run ends: %w", err)
	}
	out := make([]board.Run, 0, len(ids))
	for _, id := range ids {
		r, err := s.Run(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// RunEndTold records that a run's end was said in its thread.
func (s *Store) RunEndTold(ctx context.Context, id board.RunID) error {
	if _, err := s.pool.Exec(ctx, markRunEndTold, id); err != nil {
		return fmt.Errorf("run %s told: %w", id, err)
	}
	return nil
}
