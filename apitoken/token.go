// Package apitoken guards BobNet's REST API with named tokens that carry
// scopes (read, propose, approve, write, admin), may be bound to one
// user and may be limited to channels. Tokens are stored as SHA-256 hashes in Postgres (package store
// runs the SQL, reached through Rows), so a database dump does not hand
// out API access; BOBNET_API_TOKEN stays the bootstrap admin token. It is
// its own package rather than part of the console because the console's
// and the board's API routes both sit behind it, and `bobnet token`
// manages the same table without serving anything.
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

	"github.com/bobnet/bobnet/board"
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

// Errors of the token store; check with errors.Is. ErrNotFound stays
// apart from board.ErrNotFound: its text ("no such token") is what the
// token API and the CLI show, and a missing token must never pass for a
// missing board row where the API answers 404 for one.
var (
	ErrNotFound = errors.New("no such token")
	ErrRevoked  = errors.New("token was revoked")
	ErrExists   = errors.New("a token with that name exists; revoke it first")
	ErrBadName  = errors.New("token names are 1 to 64 lower-case letters, digits, '.', '_' or '-'")
	ErrNoScopes = errors.New("give at least one scope: read, propose, approve, write or admin")
	// ErrBadChannels means a channel pattern is malformed; the error
	// wrapping it says which and why.
	ErrBadChannels = errors.New("bad channel pattern")
)

// tokenName is checked with the length apart: a counted repetition
// compiles to a copy of the class per count, held for the life of the
// process.
var tokenName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// Token is a token's record; the secret itself is never stored.
type Token struct {
	Name   string  `json:"name"`
	Scopes []Scope `json:"scopes"`
	User   string  `json:"user,omitempty"` // bound user; empty means any
	// Channels are the patterns of the channels the token reaches (exact
	// keys, or prefixes ending in *); none means every channel.
	Channels  []string  `json:"channels,omitempty"`
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
		return nil, ErrNoScopes
	}
	return out, nil
}

// Hash is how a token is stored and looked up.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Rows are where tokens are kept, by the hash of their secret;
// *store.Store is one (store/apitokens.go holds the SQL).
type Rows interface {
	// InsertAPIToken keeps a new token; created is false when a live
	// token has the name.
	InsertAPIToken(ctx context.Context, t board.APIToken, hash []byte) (created bool, err error)
	// APITokens lists every token, revoked ones included, by name.
	APITokens(ctx context.Context) ([]board.APIToken, error)
	// APITokenByHash finds a token by its hash; board.ErrNotFound when
	// none has it.
	APITokenByHash(ctx context.Context, hash []byte) (board.APIToken, error)
	// RevokeAPIToken ends a live token; board.ErrNotFound when none has
	// the name.
	RevokeAPIToken(ctx context.Context, name string) error
}

// Tokens makes, lists, revokes and looks up tokens in rows: it draws and
// hashes the secrets and speaks in Tokens and this package's errors, so
// the guard and `bobnet token` need not know the rows.
type Tokens struct {
	rows Rows
}

// NewTokens returns a token store on rows (a migrated database's).
func NewTokens(rows Rows) *Tokens { return &Tokens{rows: rows} }

// Create makes a token that reaches every channel and returns its
// secret, which exists nowhere else: show it once. ErrExists when a live
// token has the name.
func (s *Tokens) Create(ctx context.Context, name string, scopes []Scope, user string) (string, error) {
	return s.CreateLimited(ctx, name, scopes, user, nil)
}

// CreateLimited is Create for a token that reaches only the channels its
// patterns match (CheckChannelPattern); no patterns is no limit. The
// error of a malformed pattern wraps ErrBadChannels and says what is
// wrong with it.
func (s *Tokens) CreateLimited(ctx context.Context, name string, scopes []Scope, user string, channels []string) (string, error) {
	if len(name) > 64 || !tokenName.MatchString(name) {
		return "", ErrBadName
	}
	if len(scopes) == 0 {
		return "", fmt.Errorf("create token %s: %w", name, ErrNoScopes)
	}
	channels, err := CheckChannels(channels)
	if err != nil {
		return "", fmt.Errorf("create token %s: %w", name, err)
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	secret := "bobnet_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	names := make([]string, len(scopes))
	for i, sc := range scopes {
		names[i] = string(sc)
	}
	created, err := s.rows.InsertAPIToken(ctx, board.APIToken{Name: name, Scopes: names, User: user, Channels: channels}, Hash(secret))
	if err != nil {
		return "", err
	}
	if !created {
		return "", fmt.Errorf("create token %s: %w", name, ErrExists)
	}
	return secret, nil
}

// tokenOf is a row's Token.
func tokenOf(r board.APIToken) Token {
	t := Token{Name: r.Name, User: r.User, Channels: r.Channels, CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt}
	for _, s := range r.Scopes {
		t.Scopes = append(t.Scopes, Scope(s))
	}
	return t
}

// List returns every token, revoked ones included, by name.
func (s *Tokens) List(ctx context.Context) ([]Token, error) {
	rows, err := s.rows.APITokens(ctx)
	if err != nil {
		return nil, err
	}
	ts := make([]Token, len(rows))
	for i, r := range rows {
		ts[i] = tokenOf(r)
	}
	return ts, nil
}

// Revoke ends a token at once. ErrNotFound when no live token has the name.
func (s *Tokens) Revoke(ctx context.Context, name string) error {
	err := s.rows.RevokeAPIToken(ctx, name)
	if errors.Is(err, board.ErrNotFound) {
		return fmt.Errorf("revoke token %s: %w", name, ErrNotFound)
	}
	return err
}

// Lookup returns the token whose secret this is. ErrNotFound for an
// unknown secret, ErrRevoked for a revoked one.
func (s *Tokens) Lookup(ctx context.Context, secret string) (Token, error) {
	r, err := s.rows.APITokenByHash(ctx, Hash(secret))
	if errors.Is(err, board.ErrNotFound) {
		return Token{}, ErrNotFound
	}
	if err != nil {
		return Token{}, err
	}
	t := tokenOf(r)
	if !t.RevokedAt.IsZero() {
		return t, ErrRevoked
	}
	return t, nil
}
