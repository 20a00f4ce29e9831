package bot_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
)

// Whoever clicks "propose again" re-offers the requester's plan; it stays
// the requester's. Otherwise another member's click would let the
// requester approve their own plan under self_approval: false.
func TestProposeAgainKeepsTheRequester(t *testing.T) {
	t.Parallel()
	env := bottest.New(t, bottest.WithConfig(func(c *bot.Config) { c.ProposalTTL = 300 * time.Millisecond }))
	setPolicy(t, env, "console:general", board.Policy{Deciders: []string{board.DeciderAnyMember}, Approvals: 1, SelfApproval: false})
	answerNewspaper(t, env)
	ctx := context.Background()
	p := propose(t, env, "alice")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if cur, err := env.Engine.Proposal(ctx, p.ID); err == nil && cur.State == board.ProposalExpired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the proposal never expired")
		}
	}
	rid, err := env.Engine.ProposeAgain(ctx, p.ID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitRequest(t, rid)
	again, err := env.Engine.Proposal(ctx, st.ProposalID)
	if err != nil {
		t.Fatal(err)
	}
	if again.RequestedBy != "alice" {
		t.Errorf("proposed again by bob: requested by %q, want alice", again.RequestedBy)
	}
	if rec, err := env.Store.Proposal(ctx, again.ID); err != nil || rec.RequestedBy != "alice" {
		t.Errorf("Postgres: requested by %q (%v), want alice", rec.RequestedBy, err)
	}
	var pe *bot.PolicyError
	if _, err := env.Engine.Approve(ctx, again.ID, "alice"); !errors.As(err, &pe) {
		t.Fatalf("alice approving her own plan, proposed again by bob: %v, want a self-approval refusal", err)
	}
	if a, err := env.Engine.Approve(ctx, again.ID, "bob"); err != nil || a.BoardID == "" {
		t.Fatalf("bob's approval = %+v, %v", a, err)
	}
}
