// Package apitoken guards BobNet's REST API with named tokens that carry
// scopes (read, propose, approve, write, admin) and may be bound to one
// user. Tokens are stored as SHA-256 hashes in Postgres, so a database
// dump does not hand out API access; BOBNET_API_TOKEN stays the bootstrap
// admin token. It is its own package rather than part of the console
// because the console's and the board's API routes both sit behind it, and
// `bobnet token` manages the same table without serving anything.
package apitoken

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Scope is one kind of thing a token may do.
type Scope string

// The scopes. Admin may do everything.
const (
	ScopeRead    Scope = "read"    // GET anything
	ScopePropose Scope = "propose" // post messages, revise, propose again
	ScopeApprove Scope = "approve" // approve and cancel proposals
	ScopeWrite   Scope = "write"   // change cards
	ScopeAdmin   Scope = "admin"   // everything, policies included
)

// Scopes lists every scope in order.
var Scopes = []Scope{ScopeRead, ScopePropose, ScopeApprove, ScopeWrite, ScopeAdmin}

// Errors of the token store; check with errors.Is.
var (
	ErrNotFound = errors.New("no such token")
	ErrRevoked  = errors.New("token was revoked")
	ErrExists   = errors.New("a token with that name exists; revoke it first")
	ErrBadName  = errors.New("token names are 1 to 64 lower-case letters, digits, '.', '_' or '-'")
)

var tokenName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// Token is a token's record; the secret itself is never stored.
type Token struct {
	Name      string    `json:"name"`
	Scopes    []Scope   `json:"scopes"`
	User      string    `json:"user,omitempty"` // bound user; empty means any
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// Has says whether the token may act with scope s.
func (t Token) Has(s Scope) bool {
	return slices.Contains(t.Scopes, ScopeAdmin) || slices.Contains(t.Scopes, s)
}

// ParseScopes reads a comma-separated scope list.
func ParseScopes(list string) ([]Scope, error) {
	var out []Scope
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(Scopes, Scope(s)) {
			return nil, fmt.Errorf("unknown scope %q (known: read, propose, approve, write, admin)", s)
		}
		if !slices.Contains(out, Scope(s)) {
			out = append(out, Scope(s))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("give at least one scope: read, propose, approve, write or admin")
	}
	return out, nil
}

// Hash is how a token is stored and looked up.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Store keeps tokens in Postgres.
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a token store on pool (migrated).
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// insertToken takes a new name, or the name of a revoked token.
const insertToken = `INSERT INTO api_tokens (name, hash, scopes, bound_user) VALUES ($1, $2, $3, $4)
ON CONFLICT (name) DO UPDATE SET hash = EXCLUDED.hash, scopes = EXCLUDED.scopes, bound_user = EXCLUDED.bound_user,
    created_at = now(), revoked_at = NULL
WHERE api_tokens.revoked_at IS NOT NULL`

// Create makes a token and returns its secret, which exists nowhere else:
// show it once. ErrExists when a live token has the name.
func (s *Store) Create(ctx context.Context, name string, scopes []Scope, user string) (string, error) {
	if !tokenName.MatchString(name) {
		return "", ErrBadName
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	secret := "bobnet_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	names := make([]string, len(scopes))
	for i, sc := range scopes {
		names[i] = string(sc)
	}
	tag, err := s.pool.Exec(ctx, insertToken, name, Hash(secret), names, user)
	if err != nil {
		return "", fmt.Errorf("create token %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return "", fmt.Errorf("create token %s: %w", name, ErrExists)
	}
	return secret, nil
}

const selectTokens = `SELECT name, scopes, bound_user, created_at, revoked_at FROM api_tokens`

func scanToken(row pgx.CollectableRow) (Token, error) {
	var t Token
	var scopes []string
	var revoked *time.Time
	if err := row.Scan(&t.Name, &scopes, &t.User, &t.CreatedAt, &revoked); err != nil {
		return t, err
	}
	for _, s := range scopes {
		t.Scopes = append(t.Scopes, Scope(s))
	}
	if revoked != nil {
		t.RevokedAt = *revoked
	}
	return t, nil
}

// List returns every token, revoked ones included, by name.
func (s *Store) List(ctx context.Context) ([]Token, error) {
	rows, err := s.pool.Query(ctx, selectTokens+` ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	ts, err := pgx.CollectRows(rows, scanToken)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return ts, nil
}

const revokeToken = `UPDATE api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL`

// Revoke ends a token at once. ErrNotFound when no live token has the name.
func (s *Store) Revoke(ctx context.Context, name string) error {
	tag, err := s.pool.Exec(ctx, revokeToken, name)
	if err != nil {
		return fmt.Errorf("revoke token %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("revoke token %s: %w", name, ErrNotFound)
	}
	return nil
}

// Lookup returns the token whose secret this is. ErrNotFound for an
// unknown secret, ErrRevoked for a revoked one.
func (s *Store) Lookup(ctx context.Context, secret string) (Token, error) {
	rows, err := s.pool.Query(ctx, selectTokens+` WHERE hash = $1`, Hash(secret))
	if err != nil {
		return Token{}, fmt.Errorf("look up token: %w", err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanToken)
	if errors.Is(err, pgx.ErrNoRows) {
		return Token{}, ErrNotFound
	}
	if err != nil {
		return Token{}, fmt.Errorf("look up token: %w", err)
	}
	if !t.RevokedAt.IsZero() {
		return t, ErrRevoked
	}
	return t, nil
}
