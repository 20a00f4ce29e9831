package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// NewestKey records current as a key in use, the first time a replica
// seals with it (encryption_keys), and returns, of held, the key
// recorded last. During a rotation replicas disagree for a while about
// the current key: one still on the old key (holding the new one among its
// old keys) learns from here that the new one is in use and seals under
// it, so nothing it writes is sealed under a key about to be dropped, and
// no replica seals a row back under the old key.
func (s *Store) NewestKey(ctx context.Context, current string, held []string) (string, error) {
	if _, err := s.pool.Exec(ctx, `INSERT INTO encryption_keys (key_id) VALUES ($1) ON CONFLICT (key_id) DO NOTHING`, current); err != nil {
		return "", fmt.Errorf("record encryption key %s: %w", current, err)
	}
	var newest string
	err := s.pool.QueryRow(ctx, `SELECT key_id FROM encryption_keys WHERE key_id = ANY($1)
		ORDER BY current_since DESC, key_id LIMIT 1`, held).Scan(&newest)
	if errors.Is(err, pgx.ErrNoRows) {
		return current, nil // held does not name current: nothing newer known
	}
	if err != nil {
		return "", fmt.Errorf("read the newest encryption key: %w", err)
	}
	return newest, nil
}
