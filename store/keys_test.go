package store_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestBoardKeysAreUnique: boards of the same name get keys of their own
// (NEWS, NEWS2, …), also when approved at the same moment, so a handle
// names one card wherever it is used.
func TestBoardKeysAreUnique(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	var mu sync.Mutex
	var keys []string
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			res, err := s.Execute(ctx, board.Execution{ProposalID: board.ProposalID(fmt.Sprintf("p_key%d", i)), Channel: "console:keys", Plan: newspaper(t)})
			if err != nil {
				t.Error(err)
				return
			}
			b, cards, err := s.Board(ctx, res.BoardID)
			if err != nil || !strings.HasPrefix(cards[0].Handle, b.Key+"-") {
				t.Errorf("board %+v, first card %+v: %v", b, cards[0], err)
			}
			mu.Lock()
			keys = append(keys, b.Key)
			mu.Unlock()
		})
	}
	wg.Wait()
	sort.Strings(keys)
	if strings.Join(keys, ",") != "NEWS,NEWS2,NEWS3,NEWS4,NEWS5,NEWS6,NEWS7,NEWS8" {
		t.Fatalf("keys = %v", keys)
	}
}

// TestCardByHandle: a handle names one card across boards, in any case;
// a handle of no card, or not shaped like one, is ErrNotFound.
func TestCardByHandle(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	var second board.ID
	for i := range 2 {
		res, err := s.Execute(ctx, board.Execution{ProposalID: board.ProposalID(fmt.Sprintf("p_handle%d", i)), Channel: "console:handles", Plan: newspaper(t)})
		if err != nil {
			t.Fatal(err)
		}
		second = res.BoardID
	}
	c, err := s.CardByHandle(ctx, board.TenantConsole, "news2-3")
	if err != nil || c.BoardID != second || c.Handle != "NEWS2-3" || c.Number != 3 {
		t.Fatalf("news2-3 = %+v, %v (second board %s)", c, err, second)
	}
	if c, err := s.CardByHandle(ctx, board.TenantConsole, "NEWS-3"); err != nil || c.BoardID == second {
		t.Fatalf("NEWS-3 = %+v, %v", c, err)
	}
	for _, h := range []string{"NEWS-99", "NOPE-1", "NEWS-0", "NEWS--1", "NEWS-+1", "NE WS-1", "NEWS"} {
		if _, err := s.CardByHandle(ctx, board.TenantConsole, h); !errors.Is(err, board.ErrNotFound) {
			t.Errorf("%q: %v, want ErrNotFound", h, err)
		}
	}
}

// TestBoardKeysArePerTenant: a tenant's first "Daily Research Newspaper"
// board gets NEWS whatever other tenants have, and a handle or key of one
// tenant finds nothing in another; with no tenant (the API) a handle that
// several tenants share is ErrAmbiguous, saying nothing of the cards.
func TestBoardKeysArePerTenant(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	boards := map[string]board.ID{}
	for i, ch := range []string{"slack:TONE/C1", "slack:TTWO/C1", "slack:TONE/C2", "matrix:!room:example.org", "console:hook-github", "console:news"} {
		res, err := s.Execute(ctx, board.Execution{ProposalID: board.ProposalID(fmt.Sprintf("p_tenant%d", i)), Channel: ch, Plan: newspaper(t)})
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := s.Board(ctx, res.BoardID)
		if err != nil {
			t.Fatal(err)
		}
		boards[ch] = b.ID
		want := "NEWS"
		if ch == "slack:TONE/C2" {
			want = "NEWS2" // the second of workspace TONE
		}
		if b.Key != want {
			t.Errorf("board in %s has key %s, want %s", ch, b.Key, want)
		}
	}
	for ch, id := range boards {
		tenant := board.TenantOf(ch)
		key := "NEWS"
		if ch == "slack:TONE/C2" {
			key = "NEWS2"
		}
		b, err := s.BoardByKey(ctx, tenant, strings.ToLower(key))
		if err != nil || b.ID != id {
			t.Errorf("%s's %s = %s, %v; want %s", tenant, key, b.ID, err, id)
		}
		c, err := s.CardByHandle(ctx, tenant, key+"-2")
		if err != nil || c.BoardID != id {
			t.Errorf("%s's %s-2 = %+v, %v", tenant, key, c, err)
		}
	}
	if _, err := s.BoardByKey(ctx, board.TenantOf("slack:TTWO/C9"), "NEWS2"); !errors.Is(err, board.ErrNotFound) {
		t.Errorf("TTWO found TONE's NEWS2: %v", err)
	}
	if _, err := s.CardByHandle(ctx, board.TenantOf("slack:TTHREE/C1"), "NEWS-1"); !errors.Is(err, board.ErrNotFound) {
		t.Errorf("a tenant with no boards found NEWS-1: %v", err)
	}
	if c, err := s.CardByHandle(ctx, "", "NEWS2-1"); err != nil || c.BoardID != boards["slack:TONE/C2"] {
		t.Errorf("any tenant's NEWS2-1 = %+v, %v", c, err)
	}
	_, err := s.CardByHandle(ctx, "", "NEWS-1")
	if !errors.Is(err, board.ErrAmbiguous) || strings.Contains(err.Error(), "TONE") || strings.Contains(err.Error(), "Research") {
		t.Errorf("any tenant's NEWS-1: %v, want ErrAmbiguous naming no tenant or card", err)
	}
}

// TestTenantRuleMatchesSQL: the database's bobnet_tenant, which keys
// boards' tenants and their keys, says what board.TenantOf says.
func TestTenantRuleMatchesSQL(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	for _, ch := range []string{"", "slack:C0123", "slack:T0ONE/C0123", "slack:E0ORG/C1", "slack", "slack:",
		"matrix:!abc:example.org", "matrix:!a/b:example.org", "console:newsroom", "console:hook-github", "console:hook-",
		"console", "webhook:github", "other:thing", "noColon"} {
		var got string
		if err := pool.QueryRow(context.Background(), `SELECT bobnet_tenant($1)`, ch).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := string(board.TenantOf(ch)); got != want {
			t.Errorf("bobnet_tenant(%q) = %q, board.TenantOf = %q", ch, got, want)
		}
	}
}
