package plan_test

import (
	"testing"

	"github.com/bobnet/bobnet/plan"
)

func TestNewBoardIsTheLastCreated(t *testing.T) {
	t.Parallel()
	env := plan.Envelope{Actions: []plan.Action{
		{Type: plan.ActionCreateBoardWithCards, Board: &plan.BoardDraft{Name: "First"}},
		{Type: plan.ActionCreateCardBatch},
		{Type: plan.ActionCreateBoard, Board: &plan.BoardDraft{Name: "Second"}},
	}}
	if b := env.NewBoard(); b == nil || b.Name != "Second" {
		t.Fatalf("NewBoard = %+v, want the last board created (the one the channel is bound to)", b)
	}
	cardsOnly := plan.Envelope{Actions: []plan.Action{{Type: plan.ActionCreateCard}}}
	if b := cardsOnly.NewBoard(); b != nil {
		t.Fatalf("NewBoard of a card-only plan = %+v", b)
	}
}
