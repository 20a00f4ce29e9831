package web_test

import (
	"context"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store"
)

var profiles = []string{"Coder", "Planner", "Researcher", "Reviewer"}

func ptr(s string) *string { return &s }

// newspaper returns the testdata newspaper plan, validated and normalized.
func newspaper(t testing.TB) plan.Envelope {
	t.Helper()
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{Profiles: profiles})
	if !res.Valid {
		t.Fatalf("newspaper plan invalid: %+v", res.Errors)
	}
	return *res.Plan
}

// newspaperBoard executes the newspaper plan and returns its board and
// cards by temp id.
func newspaperBoard(t *testing.T, s *store.Store, channel string) (board.ID, map[string]board.Card) {
	t.Helper()
	ctx := context.Background()
	res, err := s.Execute(ctx, board.Execution{ProposalID: board.ProposalID("p_" + channel), Channel: channel, Thread: "T1", ApprovedBy: "alice", Plan: newspaper(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, cards, err := s.Board(ctx, res.BoardID)
	if err != nil {
		t.Fatal(err)
	}
	byTemp := map[string]board.Card{}
	for temp, id := range res.CardIDs {
		for _, c := range cards {
			if c.ID == id {
				byTemp[temp] = c
			}
		}
	}
	return res.BoardID, byTemp
}
