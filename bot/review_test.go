package bot_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// TestRunReviewsFollowThePolicy: a run started from chat is told in the
// board's thread; its cards' reviews follow the channel's policy, the
// person who started the run standing as the requester (under
// self_approval: false they cannot accept their own run's work).
func TestRunReviewsFollowThePolicy(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{Profiles: planner.ProfileNames(planner.DefaultProfiles())})
	if _, err := env.Store.Execute(ctx, board.Execution{ProposalID: "p_reviews", Channel: "console:news", Thread: "T1", ApprovedBy: "alice", Plan: *res.Plan}); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.PutPolicy(ctx, "console:news", board.Policy{Deciders: []string{"requester", "bob"}, Approvals: 1, SelfApproval: false}, "admin"); err != nil {
		t.Fatal(err)
	}
	ch := bot.Channel{Source: bot.SourceConsole, ID: "news"}
	r, err := env.Engine.StartRun(ctx, ch, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Engine.StartRun(ctx, ch, "bob", "news"); !errors.Is(err, board.ErrRunGoing) {
		t.Fatalf("second run: %v", err)
	}
	env.Poster.WaitFor(t, "the run told in the thread", func(replies []bottest.PostedReply, _, _ []bot.Proposal) bool {
		for _, rp := range replies {
			if rp.Thread.ID == "T1" && strings.Contains(rp.Reply.Text, "Run 1 started by alice") && strings.HasSuffix(rp.Reply.BoardURL, "/runs/1") {
				return true
			}
		}
		return false
	})
	job, ok, err := env.Store.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok || job.Run.ID != r.ID {
		t.Fatal(ok, err)
	}
	if _, err := env.Store.CompleteRunCard(ctx, job, "Planner", "the policy"); err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]error{"alice": bot.ErrForbidden, "carol": bot.ErrForbidden} {
		if _, err := env.Engine.ReviewByHandle(ctx, ch, user, job.Card.Handle, true, ""); !errors.Is(err, want) {
			t.Errorf("%s reviews: %v, want %v", user, err, want)
		}
	}
	up, err := env.Engine.ReviewByHandle(ctx, ch, "bob", job.Card.Handle, false, "cite the law")
	if err != nil || up.Card.Status != "Ready" {
		t.Fatalf("bob sends back: %+v %v", up.Card.Status, err)
	}
	if _, err := env.Engine.ReviewByHandle(ctx, ch, "bob", job.Card.Handle, true, ""); !errors.Is(err, board.ErrNotRunnable) {
		t.Fatalf("accept a card not in Review: %v", err)
	}
	env.Poster.WaitFor(t, "the send-back told", func(replies []bottest.PostedReply, _, _ []bot.Proposal) bool {
		for _, rp := range replies {
			if strings.Contains(rp.Reply.Text, "sent back by bob: “cite the law”") {
				return true
			}
		}
		return false
	})
}
