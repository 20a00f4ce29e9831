package matrix

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/bot"
)

// Review announcements (table of migration 0017): which notice announced
// which run's card, so a reaction on it reviews that card.

const insertReview = `INSERT INTO matrix_reviews (room_id, event_id, thread_id, run_id, card_id, handle, round)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`

// SaveReview records that event in room, in thread, announced ref.
func (s *Store) SaveReview(ctx context.Context, room id.RoomID, evt, thread id.EventID, ref bot.ReviewRef) error {
	if _, err := s.pool.Exec(ctx, insertReview, room, evt, thread, ref.Run, ref.Card, ref.Handle, ref.Round); err != nil {
		return fmt.Errorf("save matrix review: %w", err)
	}
	return nil
}

const selectReview = `SELECT thread_id, run_id, card_id, handle, round FROM matrix_reviews WHERE room_id = $1 AND event_id = $2`

// Review returns the card event announced and the announcement's thread;
// ErrNotFound when event announced no review.
func (s *Store) Review(ctx context.Context, room id.RoomID, evt id.EventID) (bot.ReviewRef, id.EventID, error) {
	var ref bot.ReviewRef
	var thread id.EventID
	err := s.pool.QueryRow(ctx, selectReview, room, evt).Scan(&thread, &ref.Run, &ref.Card, &ref.Handle, &ref.Round)
	if errors.Is(err, pgx.ErrNoRows) {
		return bot.ReviewRef{}, "", fmt.Errorf("review announcement %s: %w", evt, ErrNotFound)
	}
	if err != nil {
		return bot.ReviewRef{}, "", fmt.Errorf("load matrix review: %w", err)
	}
	return ref, thread, nil
}

const selectLatestReview = `SELECT event_id FROM matrix_reviews WHERE room_id = $1 AND run_id = $2 AND card_id = $3
ORDER BY created_at DESC LIMIT 1`

// LatestReview returns the latest announcement of ref's card in room;
// ErrNotFound when it has none there.
func (s *Store) LatestReview(ctx context.Context, room id.RoomID, ref bot.ReviewRef) (id.EventID, error) {
	var evt id.EventID
	err := s.pool.QueryRow(ctx, selectLatestReview, room, ref.Run, ref.Card).Scan(&evt)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("review announcement of %s: %w", ref.Card, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("load matrix review: %w", err)
	}
	return evt, nil
}
