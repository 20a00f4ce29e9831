package store_test

import (
	"context"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestCardsAssignedByPersonIDInTenant: the cards listed are those whose
// assignee is exactly the person id, on boards of the tenant asked for,
// not Done; no name or case folding matches.
func TestCardsAssignedByPersonIDInTenant(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	_, a := newspaperBoard(t, s, "slack:T_A/C1")
	_, b := newspaperBoard(t, s, "slack:T_B/C1")
	for _, ch := range []struct {
		card board.Card
		to   string
	}{
		{a["topic_policy"], "slack:T_A/U1"},
		{a["research_a"], "SLACK:T_A/U1"},
		{a["research_b"], "U1"},
		{a["research_c"], "slack:T_A/U1"},
		{b["topic_policy"], "slack:T_A/U1"}, // the same id on another tenant's board
	} {
		if _, err := s.ChangeCard(ctx, board.CardChange{Card: ch.card.ID, Actor: "t", Via: "test", Assignee: ptr(ch.to)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE cards SET status = 'Done' WHERE id = $1`, a["research_c"].ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.CardsAssigned(ctx, "slack:T_A/U1", "slack:T_A", 10)
	if err != nil || len(got) != 1 || got[0].Card.ID != a["topic_policy"].ID || got[0].Board.Channel != "slack:T_A/C1" {
		t.Fatalf("cards of slack:T_A/U1 in slack:T_A = %+v, %v", got, err)
	}
	// The tenant asked for is the one searched (the engine asks for the
	// person's own).
	if got, err := s.CardsAssigned(ctx, "slack:T_A/U1", "slack:T_B", 10); err != nil || len(got) != 1 || got[0].Card.ID != b["topic_policy"].ID {
		t.Errorf("cards of slack:T_A/U1 in slack:T_B = %+v, %v", got, err)
	}
	if got, err := s.CardsAssigned(ctx, "slack:T_A/U1", "", 10); err != nil || len(got) != 0 {
		t.Errorf("cards with no tenant = %+v, %v", got, err)
	}
}
