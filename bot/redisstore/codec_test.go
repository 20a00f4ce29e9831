package redisstore

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// fullProposal has every field set, and text that needs escaping, so the
// comparison below covers the whole type.
func fullProposal(t *testing.T) board.Proposal {
	t.Helper()
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{})
	if !res.Valid {
		t.Fatalf("newspaper plan: %+v", res.Errors)
	}
	env := *res.Plan
	now := time.Date(2026, 11, 23, 10, 4, 5, 123456789, time.UTC)
	return board.Proposal{
		ID: "p_abc", Version: 2, Supersedes: "p_old", RequestID: "r_abc",
		Thread:      board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: "C1"}, ID: "1700000000.000100"},
		RequestedBy: "alice", Request: "plan <our> \"daily\" newspaper & more \u2028 é 🗞",
		Plan: env, Warnings: []plan.Issue{{Path: "$.actions[0]", Message: "a warning"}},
		Changes:      &board.Changes{Added: []string{"A"}, Retitled: []board.Change{{From: "x", To: "y"}}, BoardChanged: &board.Change{From: "a", To: "b"}},
		BoardChanges: []board.BoardChange{{Card: "NEWS-1", Title: "t", Field: "status", From: "Backlog", To: "Done"}},
		State:        board.ProposalApproved, CreatedAt: now, ExpiresAt: now.Add(time.Hour), DecidedBy: "bob", DecidedAt: now.Add(time.Minute),
		BoardID: "b_1", BoardURL: "http://bobnet.test/boards/b_1", TargetBoard: "b_0", Message: "1700000000.000200", Chain: "p_first",
		Quorum: &board.Quorum{Key: "slack:C1", Policy: board.Policy{Deciders: []string{"requester", "U2"}, Approvals: 2, SelfApproval: true}, Needed: 2, Approvals: []string{"U2"}},
	}
}

func TestDecodeProposalMatchesEncodingJSON(t *testing.T) {
	for name, p := range map[string]board.Proposal{"full": fullProposal(t), "empty": {}, "pending": {ID: "p_1", State: board.ProposalPending}} {
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var want board.Proposal
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeProposal(p.ID, string(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: go-json decoded\n%+v\nencoding/json decoded\n%+v", name, got, want)
		}
	}
	if _, err := decodeProposal("p_bad", `{"id":"p_bad","version":"two"}`); err == nil {
		t.Fatal("a malformed proposal decoded without an error")
	}
}
