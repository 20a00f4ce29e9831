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
	ch := board.Channel{Source: board.SourceConsole, ID: "news"}
	r, err := env.Engine.StartRun(ctx, ch, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Engine.StartRun(ctx, ch, "bob", "news"); !errors.Is(err, board.ErrRunGoing) {
		t.Fatalf("second run: %v", err)
	}
	env.Poster.WaitFor(t, "the run told in the thread", func(replies []bottest.PostedReply, _, _ []board.Proposal) bool {
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
	env.Poster.WaitFor(t, "the send-back told", func(replies []bottest.PostedReply, _, _ []board.Proposal) bool {
		for _, rp := range replies {
			if strings.Contains(rp.Reply.Text, "sent back by bob: “cite the law”") {
				return true
			}
		}
		return false
	})
}

// TestChatMovesWaitForTheReview: under self_approval: false the run's
// starter cannot skip the review of their own run's card by moving it:
// not with the chat move command, not from the App Home (the card
// assigned to them), not by handle through the API's path into the
// engine. Each is refused naming the review and its commands, the card
// stays in Review, and the review by a decider then moves it.
func TestChatMovesWaitForTheReview(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{Profiles: planner.ProfileNames(planner.DefaultProfiles())})
	if _, err := env.Store.Execute(ctx, board.Execution{ProposalID: "p_gate", Channel: "console:gate", Thread: "T1", ApprovedBy: "alice", Plan: *res.Plan}); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.PutPolicy(ctx, "console:gate", board.Policy{Deciders: []string{"requester", "bob"}, Approvals: 1, SelfApproval: false}, "admin"); err != nil {
		t.Fatal(err)
	}
	ch := board.Channel{Source: board.SourceConsole, ID: "gate"}
	r, err := env.Engine.StartRun(ctx, ch, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	job := env.WorkForReview(t, "the policy")
	h := job.Card.Handle
	if _, err := env.Engine.ReviewByHandle(ctx, ch, "alice", h, true, ""); !errors.Is(err, bot.ErrForbidden) {
		t.Fatalf("alice reviews her own run: %v", err)
	}
	refused := func(how string, err error) {
		t.Helper()
		if !errors.Is(err, board.ErrUnderReview) {
			t.Fatalf("%s: %v, want ErrUnderReview", how, err)
		}
		say := bot.Explain(err)
		for _, want := range []string{"accept " + h, "sendback " + h + " <why>", "/api/v1/runs/" + string(r.ID) + "/cards/" + h + "/review"} {
			if !strings.Contains(say, want) {
				t.Errorf("%s: %q does not say %q", how, say, want)
			}
		}
		c, err := env.Store.Card(ctx, job.Card.ID)
		if err != nil || c.Status != "Review" {
			t.Fatalf("%s: the card is %s (%v), want Review", how, c.Status, err)
		}
	}
	_, err = env.Engine.MoveCard(ctx, ch, "alice", h, "Done")
	refused("chat move", err)
	_, err = env.Engine.MoveCard(ctx, ch, "carol", strings.ToLower(h), "ready")
	refused("chat move back", err)
	_, err = env.Engine.EditCard(ctx, bot.CardEdit{Handle: h, User: "alice", Via: "api", Status: ptr("Done")})
	refused("edit by handle", err)
	// The App Home's Move button (person ids, Slack boards only) meets
	// the same gate: adapters/slack's TestAppHomeMoveWaitsForTheReview.
	// The review, by a decider, moves it.
	if up, err := env.Engine.ReviewByHandle(ctx, ch, "bob", h, true, ""); err != nil || up.Card.Status != "Done" {
		t.Fatalf("bob accepts: %+v %v", up.Card.Status, err)
	}
	cur, err := env.Store.Run(ctx, r.ID)
	if err != nil || cur.State != board.RunRunning {
		t.Fatalf("run: %+v %v", cur.State, err)
	}
}

func ptr(s string) *string { return &s }
