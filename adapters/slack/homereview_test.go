package slack_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// TestAppHomeMoveWaitsForTheReview: the run's starter, under
// self_approval: false, cannot move their own run's card from Review to
// Done with their App Home's Move button: the Home says the card moves
// on only through its review, naming the commands, and the card stays in
// Review.
func TestAppHomeMoveWaitsForTheReview(t *testing.T) {
	t.Parallel()
	w := newHomeWorld(t)
	ctx := context.Background()
	w.slack.mu.Lock()
	w.slack.members = map[string][]string{"U_ALICE": {"C_NEWS"}, "U_BOB": {"C_NEWS"}}
	w.slack.mu.Unlock()
	if err := w.env.Store.PutPolicy(ctx, "slack:C_NEWS", board.Policy{Deciders: []string{board.DeciderRequester, "U_BOB"}, Approvals: 1, SelfApproval: false}, "test"); err != nil {
		t.Fatal(err)
	}
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{Profiles: planner.ProfileNames(planner.DefaultProfiles())})
	if _, err := w.env.Store.Execute(ctx, board.Execution{ProposalID: "p_homegate", Channel: "slack:C_NEWS", Thread: "1690000000.000001", ApprovedBy: "U_ALICE", Plan: *res.Plan}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.env.Engine.StartRun(ctx, board.Channel{Source: board.SourceSlack, ID: "C_NEWS"}, "U_ALICE", ""); err != nil {
		t.Fatal(err)
	}
	job := w.env.WorkForReview(t, "the source policy")
	alice := "slack:U_ALICE" // her person id in a single-workspace BobNet
	if _, err := w.env.Store.ChangeCard(ctx, board.CardChange{Card: job.Card.ID, Actor: "test", Assignee: &alice}); err != nil {
		t.Fatal(err)
	}
	before := len(w.publishes("U_ALICE"))
	w.interact(t, homeClick("U_ALICE", "bobnet_home_move:Done", string(job.Card.ID)+"|Done"))
	w.waitHome(t, "U_ALICE", before, "refusing the move", func(v string) bool {
		return strings.Contains(v, job.Card.Handle+" waits for its review") && strings.Contains(v, "accept "+job.Card.Handle)
	})
	if c, err := w.env.Store.Card(ctx, job.Card.ID); err != nil || c.Status != "Review" {
		t.Fatalf("the card is %s (%v), want Review", c.Status, err)
	}
}
