package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestBoardsWithin: a board listing kept to channel patterns lists only
// the boards of the channels they match, pages included; LIKE's
// wildcards in a pattern are plain characters, an empty list of
// patterns lists nothing, and a page after a board outside the patterns
// is the empty page of an unknown board.
func TestBoardsWithin(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	byChannel := map[board.ID]string{}
	for i, ch := range []string{"slack:T0ONE/C1", "slack:T0TWO/C1", "console:news", "console:a_b", "console:axb", "slack:T0ONE/C2", "slack:C9"} {
		res, err := s.Execute(ctx, board.Execution{ProposalID: board.ProposalID(fmt.Sprintf("p_within%d", i)), Channel: ch, Plan: newspaper(t)})
		if err != nil {
			t.Fatal(err)
		}
		byChannel[res.BoardID] = ch
	}
	var slackBoard board.ID
	for id, ch := range byChannel {
		if ch == "slack:C9" {
			slackBoard = id
		}
	}
	for _, after := range []board.ID{slackBoard, "b_aaaaaaaaaaaaaaaaaaaaaaaaaa"} {
		list, next, err := s.Boards(ctx, after, 50, []string{"console:*"})
		if err != nil || len(list) != 0 || next != "" {
			t.Errorf("console:* after %s: %+v %q %v", after, list, next, err)
		}
	}
	if list, _, err := s.Boards(ctx, slackBoard, 50, nil); err != nil || len(list) != 6 {
		t.Errorf("every channel after the newest board: %d boards, %v", len(list), err)
	}
	channels := func(within []string, limit int) []string {
		t.Helper()
		var out []string
		var after board.ID
		for range 10 {
			list, next, err := s.Boards(ctx, after, limit, within)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range list {
				if byChannel[l.ID] != l.Channel {
					t.Fatalf("listing %+v", l)
				}
				out = append(out, l.Channel)
			}
			if next == "" {
				break
			}
			after = next
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		within []string
		want   []string
	}{
		{nil, []string{"console:a_b", "console:axb", "console:news", "slack:C9", "slack:T0ONE/C1", "slack:T0ONE/C2", "slack:T0TWO/C1"}},
		{[]string{"slack:T0ONE/*"}, []string{"slack:T0ONE/C1", "slack:T0ONE/C2"}},
		{[]string{"slack:T0ONE/*", "console:news"}, []string{"console:news", "slack:T0ONE/C1", "slack:T0ONE/C2"}},
		{[]string{"console:a_*"}, []string{"console:a_b"}},
		{[]string{"console:a_b"}, []string{"console:a_b"}},
		{[]string{"slack:C9", "matrix:*"}, []string{"slack:C9"}},
		{[]string{"slack:T0ONE"}, nil},
		{[]string{}, nil},
	} {
		for _, limit := range []int{1, 50} {
			if got := channels(tc.within, limit); !slices.Equal(got, tc.want) {
				t.Errorf("within %q, %d a page: %q, want %q", tc.within, limit, got, tc.want)
			}
		}
	}
}
