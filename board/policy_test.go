package board_test

import (
	"errors"
	"testing"

	"github.com/bobnet/bobnet/board"
)

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	ok := board.Policy{Deciders: []string{"requester", "admins", "@alice:example.org", "U123", "slack_group:S0ABC", "matrix_power:50"}, Approvals: 2,
		AboveCards: &board.AboveCards{Cards: 20, Approvals: 3}, Budget: &board.Budget{TokensPerDay: 1000}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid policy refused: %v", err)
	}
	for name, p := range map[string]board.Policy{
		"no deciders":         {Approvals: 1},
		"zero approvals":      {Deciders: []string{"admins"}},
		"unknown kind":        {Deciders: []string{"slak_group:S1"}, Approvals: 1},
		"bad power":           {Deciders: []string{"matrix_power:high"}, Approvals: 1},
		"power over 100":      {Deciders: []string{"matrix_power:101"}, Approvals: 1},
		"bad group":           {Deciders: []string{"slack_group:X1"}, Approvals: 1},
		"blank decider":       {Deciders: []string{" "}, Approvals: 1},
		"above without cards": {Deciders: []string{"admins"}, Approvals: 1, AboveCards: &board.AboveCards{Approvals: 2}},
		"negative budget":     {Deciders: []string{"admins"}, Approvals: 1, Budget: &board.Budget{TokensPerDay: -1}},
	} {
		if err := p.Validate(); !errors.Is(err, board.ErrInvalidPolicy) {
			t.Errorf("%s: got %v, want ErrInvalidPolicy", name, err)
		}
	}
}

func TestPolicyNeeded(t *testing.T) {
	t.Parallel()
	p := board.Policy{Approvals: 2, AboveCards: &board.AboveCards{Cards: 20, Approvals: 3}}
	for cards, want := range map[int]int{1: 2, 20: 2, 21: 3} {
		if got := p.Needed(cards); got != want {
			t.Errorf("Needed(%d) = %d, want %d", cards, got, want)
		}
	}
}
