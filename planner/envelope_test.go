package planner_test

import (
	"testing"

	"github.com/bobnet/bobnet/planner"
)

func TestNewBoardIsTheLastCreated(t *testing.T) {
	t.Parallel()
	env := planner.Envelope{Actions: []planner.Action{
		{Type: planner.ActionCreateBoardWithCards, Board: &planner.BoardDraft{Name: "First"}},
		{Type: planner.ActionCreateCardBatch},
		{Type: planner.ActionCreateBoard, Board: &planner.BoardDraft{Name: "Second"}},
	}}
	if b := env.NewBoard(); b == nil || b.Name != "Second" {
		t.Fatalf("NewBoard = %+v, want the last board created (the one the channel is bound to)", b)
	}
	cardsOnly := planner.Envelope{Actions: []planner.Action{{Type: planner.ActionCreateCard}}}
	if b := cardsOnly.NewBoard(); b != nil {
		t.Fatalf("NewBoard of a card-only plan = %+v", b)
	}
}
