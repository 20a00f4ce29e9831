package store

import (
	"context"
	"fmt"
	"time"
)

const (
	addUsage = `INSERT INTO model_usage (channel, day, tokens) VALUES ($1, $2, $3)
ON CONFLICT (channel, day) DO UPDATE SET tokens = model_usage.tokens + excluded.tokens RETURNING tokens`

	selectUsage = `SELECT coalesce((SELECT tokens FROM model_usage WHERE channel = $1 AND day = $2), 0)`
)

// AddTokens adds n model tokens to channel's use on the UTC day of at and
// returns the day's total.
func (s *Store) AddTokens(ctx context.Context, channel string, at time.Time, n int64) (int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, addUsage, channel, utcDay(at), n).Scan(&total); err != nil {
		return 0, fmt.Errorf("add model tokens of %s: %w", channel, err)
	}
	return total, nil
}

// TokensUsed returns the model tokens channel used on the UTC day of at.
func (s *Store) TokensUsed(ctx context.Context, channel string, at time.Time) (int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, selectUsage, channel, utcDay(at)).Scan(&total); err != nil {
		return 0, fmt.Errorf("model tokens of %s: %w", channel, err)
	}
	return total, nil
}

func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
