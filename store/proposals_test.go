package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

// The same request planned twice saves its proposal twice under one id:
// the second save must not replace the plan the first one's preview
// showed, pending or not.
func TestSecondSaveKeepsTheFirstPlan(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	first := []byte(`{"kind":"propose_actions","answer":"first"}`)
	if err := s.SaveProposal(ctx, board.ProposalRecord{ID: "p_twice", Channel: "c", RequestedBy: "alice", Plan: first}); err != nil {
		t.Fatal(err)
	}
	err := s.SaveProposal(ctx, board.ProposalRecord{ID: "p_twice", Channel: "c", RequestedBy: "alice", Plan: []byte(`{"kind":"propose_actions","answer":"second"}`)})
	if !errors.Is(err, board.ErrProposalExists) {
		t.Fatalf("second save: %v, want ErrProposalExists", err)
	}
	p, err := s.Proposal(ctx, "p_twice")
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Answer string }
	if err := json.Unmarshal(p.Plan, &got); err != nil || got.Answer != "first" {
		t.Fatalf("plan after a second save = %s, want the first, %s", p.Plan, first)
	}
}
