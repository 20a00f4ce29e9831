package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

func TestPolicyStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.NewStore(t)
	if _, err := s.PolicyFor(ctx, "slack:C1"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("no policies: got %v, want ErrNotFound", err)
	}
	def := board.Policy{Deciders: []string{"requester", "admins"}, Approvals: 1, SelfApproval: true}
	strict := board.Policy{Deciders: []string{"alice", "bob", "carol"}, Approvals: 2}
	if err := s.WriteFilePolicies(ctx, map[string]board.Policy{"default": def, "slack:C1": strict}); err != nil {
		t.Fatal(err)
	}
	for ch, want := range map[string]string{"slack:C1": "slack:C1", "slack:C2": "default"} {
		in, err := s.PolicyFor(ctx, ch)
		if err != nil || in.Key != want {
			t.Fatalf("PolicyFor(%s) = %+v, %v; want key %s", ch, in, err, want)
		}
	}
	mods := board.Policy{Deciders: []string{"matrix_power:50"}, Approvals: 1}
	if err := s.PutPolicy(ctx, "matrix:*", mods, "root"); err != nil {
		t.Fatal(err)
	}
	if in, _ := s.PolicyFor(ctx, "matrix:!r:x"); in.Key != "matrix:*" {
		t.Fatalf("a matrix room should get matrix:*, got %+v", in)
	}
	// The API's word outlives a restart that writes the file again.
	api := board.Policy{Deciders: []string{"dave"}, Approvals: 1}
	if err := s.PutPolicy(ctx, "slack:C1", api, "root"); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFilePolicies(ctx, map[string]board.Policy{"slack:C1": strict}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Policy(ctx, "slack:C1"); !slices.Equal(got.Deciders, []string{"dave"}) {
		t.Fatalf("writing the file again overwrote the API's policy: %+v", got)
	}
	if err := s.PutPolicy(ctx, "nochannel", api, "root"); !errors.Is(err, board.ErrInvalidPolicy) {
		t.Fatalf("bad key: got %v", err)
	}
	if err := s.PutPolicy(ctx, "slack:C3", board.Policy{}, "root"); !errors.Is(err, board.ErrInvalidPolicy) {
		t.Fatalf("bad policy: got %v", err)
	}
	all, err := s.Policies(ctx)
	if err != nil || len(all) != 3 {
		t.Fatalf("Policies = %v, %v", all, err)
	}
	if n := count(t, s, `SELECT count(*) FROM audit_events WHERE action = 'policy_changed'`); n != 2 {
		t.Fatalf("policy changes audited %d times, want 2", n)
	}
}

func TestApprovals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.NewStore(t)
	if err := s.SaveProposal(ctx, board.ProposalRecord{ID: "p_q", Channel: "c", RequestedBy: "alice", Plan: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	add := func(user string) []string {
		t.Helper()
		got, err := s.AddApproval(ctx, board.ApprovalChange{ProposalID: "p_q", User: user, Channel: "c"})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := add("bob"); !slices.Equal(got, []string{"bob"}) {
		t.Fatalf("after bob: %v", got)
	}
	if got := add("bob"); !slices.Equal(got, []string{"bob"}) {
		t.Fatalf("bob twice: %v", got)
	}
	if got := add("carol"); !slices.Equal(got, []string{"bob", "carol"}) {
		t.Fatalf("after carol: %v", got)
	}
	got, err := s.WithdrawApproval(ctx, board.ApprovalChange{ProposalID: "p_q", User: "bob", Channel: "c"})
	if err != nil || !slices.Equal(got, []string{"carol"}) {
		t.Fatalf("withdraw: %v, %v", got, err)
	}
	if _, err := s.WithdrawApproval(ctx, board.ApprovalChange{ProposalID: "p_q", User: "bob", Channel: "c"}); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("second withdraw: %v", err)
	}
	if n := count(t, s, `SELECT count(*) FROM audit_events WHERE proposal_id = 'p_q' AND action IN ('approval_recorded', 'approval_withdrawn')`); n != 3 {
		t.Fatalf("audited %d approval changes, want 3", n)
	}
	if err := s.SetProposalState(ctx, board.ProposalRecord{ID: "p_q"}, "cancelled", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddApproval(ctx, board.ApprovalChange{ProposalID: "p_q", User: "dave", Channel: "c"}); !errors.Is(err, board.ErrProposalClosed) {
		t.Fatalf("approval of a cancelled proposal: %v", err)
	}
}

func TestModelUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.NewStore(t)
	day := time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC)
	if n, err := s.AddTokens(ctx, "c", day, 100); err != nil || n != 100 {
		t.Fatalf("AddTokens = %d, %v", n, err)
	}
	if n, _ := s.AddTokens(ctx, "c", day.Add(30*time.Minute), 50); n != 150 {
		t.Fatalf("same day total %d, want 150", n)
	}
	if n, _ := s.TokensUsed(ctx, "c", day.Add(2*time.Hour)); n != 0 {
		t.Fatalf("next day starts at %d, want 0", n)
	}
	if n, _ := s.TokensUsed(ctx, "other", day); n != 0 {
		t.Fatalf("another channel: %d", n)
	}
}

// TestPolicyForWorkspace: a Slack channel of multi-workspace mode
// (slack:T1/C9) has its own policy, else its workspace's (slack:T1/*),
// else slack:*, else the default.
func TestPolicyForWorkspace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.NewStore(t)
	p := board.Policy{Deciders: []string{"admins"}, Approvals: 1}
	for _, key := range []string{"default", "slack:*", "slack:T1/*", "slack:T1/C9"} {
		if err := s.PutPolicy(ctx, key, p, "root"); err != nil {
			t.Fatal(err)
		}
	}
	for ch, want := range map[string]string{"slack:T1/C9": "slack:T1/C9", "slack:T1/C8": "slack:T1/*", "slack:T2/C9": "slack:*", "slack:C8": "slack:*", "console:x": "default"} {
		if in, err := s.PolicyFor(ctx, ch); err != nil || in.Key != want {
			t.Errorf("PolicyFor(%s) = %+v, %v; want key %s", ch, in, err, want)
		}
	}
}
