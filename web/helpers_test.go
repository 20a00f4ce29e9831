package web_test

import (
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
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
	return storetest.Execute(t, s, board.Execution{ProposalID: board.ProposalID("p_" + channel), Channel: channel, Thread: "T1", ApprovedBy: "alice", Plan: newspaper(t)})
}
