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
	c, err := s.CardByHandle(ctx, "news2-3")
	if err != nil || c.BoardID != second || c.Handle != "NEWS2-3" || c.Number != 3 {
		t.Fatalf("news2-3 = %+v, %v (second board %s)", c, err, second)
	}
	if c, err := s.CardByHandle(ctx, "NEWS-3"); err != nil || c.BoardID == second {
		t.Fatalf("NEWS-3 = %+v, %v", c, err)
	}
	for _, h := range []string{"NEWS-99", "NOPE-1", "NEWS-0", "NEWS--1", "NEWS-+1", "NE WS-1", "NEWS"} {
		if _, err := s.CardByHandle(ctx, h); !errors.Is(err, board.ErrNotFound) {
			t.Errorf("%q: %v, want ErrNotFound", h, err)
		}
	}
}
