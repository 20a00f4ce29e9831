package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestAPITokenRows: a live token's name is not taken over, a revoked one's
// is (with the new hash, scopes and user); a token is found by its hash,
// revoked or not, and revoked once.
func TestAPITokenRows(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	ci := board.APIToken{Name: "ci", Scopes: []string{"read", "propose"}}
	if created, err := s.InsertAPIToken(ctx, ci, []byte("hash-1")); err != nil || !created {
		t.Fatalf("insert = %v, %v", created, err)
	}
	if created, err := s.InsertAPIToken(ctx, board.APIToken{Name: "ci", Scopes: []string{"admin"}}, []byte("hash-2")); err != nil || created {
		t.Fatalf("a live token's name was taken over: %v, %v", created, err)
	}
	got, err := s.APITokenByHash(ctx, []byte("hash-1"))
	if err != nil || got.Name != "ci" || len(got.Scopes) != 2 || got.Scopes[1] != "propose" || got.CreatedAt.IsZero() || !got.RevokedAt.IsZero() {
		t.Fatalf("by hash = %+v, %v", got, err)
	}
	if _, err := s.APITokenByHash(ctx, []byte("hash-2")); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("unknown hash: %v", err)
	}
	if err := s.RevokeAPIToken(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeAPIToken(ctx, "ci"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("second revoke: %v", err)
	}
	if got, err := s.APITokenByHash(ctx, []byte("hash-1")); err != nil || got.RevokedAt.IsZero() {
		t.Fatalf("revoked by hash = %+v, %v", got, err)
	}
	again := board.APIToken{Name: "ci", Scopes: []string{"admin"}, User: "alice"}
	if created, err := s.InsertAPIToken(ctx, again, []byte("hash-3")); err != nil || !created {
		t.Fatalf("reissue = %v, %v", created, err)
	}
	if _, err := s.APITokenByHash(ctx, []byte("hash-1")); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("the revoked secret still finds the token: %v", err)
	}
	if created, err := s.InsertAPIToken(ctx, board.APIToken{Name: "bare"}, []byte("hash-4")); err != nil || !created {
		t.Fatalf("no scopes = %v, %v", created, err)
	}
	list, err := s.APITokens(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "bare" || list[1].User != "alice" || !list[1].RevokedAt.IsZero() {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

// TestAPITokenChannels: a token's channel patterns are kept in order and
// read back by hash and in the list; a token without any reads back with
// none (every channel); a revoked name taken over takes the new patterns,
// and an empty pattern is refused by the table.
func TestAPITokenChannels(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	limited := board.APIToken{Name: "tenant", Scopes: []string{"read"}, Channels: []string{"slack:T0ONE/*", "console:newsroom"}}
	if created, err := s.InsertAPIToken(ctx, limited, []byte("hash-l")); err != nil || !created {
		t.Fatalf("insert = %v, %v", created, err)
	}
	if _, err := s.InsertAPIToken(ctx, board.APIToken{Name: "all", Scopes: []string{"read"}}, []byte("hash-a")); err != nil {
		t.Fatal(err)
	}
	got, err := s.APITokenByHash(ctx, []byte("hash-l"))
	if err != nil || !slices.Equal(got.Channels, []string{"slack:T0ONE/*", "console:newsroom"}) {
		t.Fatalf("by hash = %+v, %v", got, err)
	}
	if got, err := s.APITokenByHash(ctx, []byte("hash-a")); err != nil || got.Channels != nil {
		t.Fatalf("unlimited by hash = %#v, %v", got.Channels, err)
	}
	list, err := s.APITokens(ctx)
	if err != nil || len(list) != 2 || list[0].Channels != nil || len(list[1].Channels) != 2 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if err := s.RevokeAPIToken(ctx, "tenant"); err != nil {
		t.Fatal(err)
	}
	again := board.APIToken{Name: "tenant", Scopes: []string{"read"}, Channels: []string{"matrix:!room:example.org"}}
	if created, err := s.InsertAPIToken(ctx, again, []byte("hash-l2")); err != nil || !created {
		t.Fatalf("reissue = %v, %v", created, err)
	}
	if got, err := s.APITokenByHash(ctx, []byte("hash-l2")); err != nil || !slices.Equal(got.Channels, again.Channels) {
		t.Fatalf("reissued = %+v, %v", got, err)
	}
	if _, err := s.InsertAPIToken(ctx, board.APIToken{Name: "blank", Scopes: []string{"read"}, Channels: []string{""}}, []byte("hash-b")); err == nil {
		t.Fatal("an empty channel pattern was stored")
	}
}
