package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

const (
	// insertAPIToken takes a new name, or the name of a revoked token.
	insertAPIToken = `INSERT INTO api_tokens (name, hash, scopes, bound_user, channels) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (name) DO UPDATE SET hash = EXCLUDED.hash, scopes = EXCLUDED.scopes, bound_user = EXCLUDED.bound_user,
    channels = EXCLUDED.channels, created_at = now(), revoked_at = NULL
WHERE api_tokens.revoked_at IS NOT NULL`
	selectAPITokens = `SELECT name, scopes, bound_user, channels, created_at, revoked_at FROM api_tokens`
	revokeAPIToken  = `UPDATE api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL`
)

// InsertAPIToken keeps a new token, t's name, scopes, user and channel
// patterns (none: every channel) with the
// hash of its secret (the secret itself is never stored). A revoked
// token's name is taken over; created is false when a live token has the
// name, and nothing is written.
func (s *Store) InsertAPIToken(ctx context.Context, t board.APIToken, hash []byte) (created bool, err error) {
	scopes := t.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	channels := t.Channels
	if channels == nil {
		channels = []string{}
	}
	tag, err := s.pool.Exec(ctx, insertAPIToken, t.Name, hash, scopes, t.User, channels)
	if err != nil {
		return false, fmt.Errorf("create token %s: %w", t.Name, err)
	}
	return tag.RowsAffected() > 0, nil
}

func scanAPIToken(row pgx.CollectableRow) (board.APIToken, error) {
	var t board.APIToken
	var revoked *time.Time
	if err := row.Scan(&t.Name, &t.Scopes, &t.User, &t.Channels, &t.CreatedAt, &revoked); err != nil {
		return t, err
	}
	if len(t.Channels) == 0 {
		t.Channels = nil
	}
	if revoked != nil {
		t.RevokedAt = *revoked
	}
	return t, nil
}

// APITokens returns every token, revoked ones included, by name.
func (s *Store) APITokens(ctx context.Context) ([]board.APIToken, error) {
	rows, err := s.pool.Query(ctx, selectAPITokens+` ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	ts, err := pgx.CollectRows(rows, scanAPIToken)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return ts, nil
}

// APITokenByHash returns the token, revoked or not, whose secret hashes
// to hash; board.ErrNotFound when none does.
func (s *Store) APITokenByHash(ctx context.Context, hash []byte) (board.APIToken, error) {
	rows, err := s.pool.Query(ctx, selectAPITokens+` WHERE hash = $1`, hash)
	if err != nil {
		return board.APIToken{}, fmt.Errorf("look up token: %w", err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanAPIToken)
	if errors.Is(err, pgx.ErrNoRows) {
		return board.APIToken{}, fmt.Errorf("look up token: %w", board.ErrNotFound)
	}
	if err != nil {
		return board.APIToken{}, fmt.Errorf("look up token: %w", err)
	}
	return t, nil
}

// RevokeAPIToken ends a token at once; board.ErrNotFound when no live
// token has the name.
func (s *Store) RevokeAPIToken(ctx context.Context, name string) error {
	tag, err := s.pool.Exec(ctx, revokeAPIToken, name)
	if err != nil {
		return fmt.Errorf("revoke token %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("revoke token %s: %w", name, board.ErrNotFound)
	}
	return nil
}
