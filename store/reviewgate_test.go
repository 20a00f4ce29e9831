package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestACardInReviewMovesOnlyThroughItsReview: while its run runs, a card
// in Review is moved by nothing but its review decision: a change of its
// status from any caller (a person, the page, an approved plan) is
// refused with the review route named, and the card stays in Review;
// other fields may change. A runner's card whose output is reviewed
// does not skip Review to Done either, while people's cards and
// unreviewed runners' cards move to Done as they like. Once the run has
// ended the card moves freely.
func TestACardInReviewMovesOnlyThroughItsReview(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s, "console:gate")
	// The Coder's cards are people's; the Reviewer's output skips Review.
	runners := plan.Runners{Others: plan.Runner{Name: "model"}, ByName: map[string]plan.Runner{
		"coder": {}, "reviewer": {Name: "model", NoReview: true},
	}}
	run, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: runners, Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	job, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := s.CompleteRunCard(ctx, job, "Planner", "the policy"); err != nil {
		t.Fatal(err)
	}
	card := job.Card.ID
	status := func() string {
		t.Helper()
		c, err := s.Card(ctx, card)
		if err != nil {
			t.Fatal(err)
		}
		return c.Status
	}
	for _, to := range []string{"Done", "Ready", "Blocked", "In Progress", "Backlog"} {
		for _, via := range []string{"api", "page", "slack"} {
			_, err := s.ChangeCard(ctx, board.CardChange{Card: card, Actor: "alice", Via: via, Status: &to})
			var gate *board.ReviewGateError
			if !errors.As(err, &gate) || !errors.Is(err, board.ErrUnderReview) {
				t.Fatalf("move to %s via %s: %v, want a *ReviewGateError", to, via, err)
			}
			if gate.Run != run.ID || gate.Number != 1 || gate.Card.Handle != job.Card.Handle ||
				gate.ReviewPath() != "/api/v1/runs/"+string(run.ID)+"/cards/"+job.Card.Handle+"/review" {
				t.Fatalf("gate = %+v (%s)", gate, gate.ReviewPath())
			}
			for _, say := range []string{gate.ReviewPath(), "accept " + job.Card.Handle, "sendback " + job.Card.Handle} {
				if !strings.Contains(err.Error(), say) {
					t.Errorf("the refusal does not say %q: %v", say, err)
				}
			}
		}
	}
	if st := status(); st != "Review" {
		t.Fatalf("after the refused moves the card is %s", st)
	}
	// Its text may still change; Review to Review is no move.
	title, review := "The source policy", "Review"
	if up, err := s.ChangeCard(ctx, board.CardChange{Card: card, Actor: "alice", Title: &title, Status: &review}); err != nil || up.Card.Title != title {
		t.Fatalf("retitle: %+v %v", up.Card.Title, err)
	}
	// An approved plan cannot move it either: the approval is refused and
	// changes nothing.
	done := changePlan(t, s, id, `[{"type":"update_card","card":"`+job.Card.Handle+`","status":"Done"}]`)
	if _, err := s.Execute(ctx, board.Execution{ProposalID: "p_gate", Channel: "console:gate", ApprovedBy: "alice", Plan: done}); !errors.Is(err, board.ErrInvalidPlan) || !errors.Is(err, board.ErrUnderReview) {
		t.Fatalf("a plan moving the card: %v", err)
	}
	if st := status(); st != "Review" {
		t.Fatalf("after the refused plan the card is %s", st)
	}
	// The review moves it.
	if up, err := s.ReviewRunCard(ctx, run.ID, card, board.AnyRound, "bob", true, ""); err != nil || up.Card.Status != "Done" {
		t.Fatalf("accept: %+v %v", up.Card.Status, err)
	}

	// A reviewed runner's card does not go to Done around its review,
	// from Backlog, Ready or In Progress; to Review it may go, and
	// then the review decides.
	var researcher, coder, reviewer board.RunCard
	for _, c := range run.Cards {
		switch c.Assignee {
		case "Researcher":
			if researcher.Card == "" {
				researcher = c
			}
		case "Coder":
			coder = c
		case "Reviewer":
			reviewer = c
		}
	}
	_, err = s.ChangeCard(ctx, board.CardChange{Card: researcher.Card, Actor: "alice", Status: ptr("Done")})
	var gate *board.ReviewGateError
	if !errors.As(err, &gate) || gate.Card.Status != "Backlog" || !strings.Contains(err.Error(), "becomes Done only through its review") {
		t.Fatalf("a researcher's card from Backlog to Done: %v", err)
	}
	if up, err := s.ChangeCard(ctx, board.CardChange{Card: researcher.Card, Actor: "alice", Status: ptr("Review")}); err != nil || up.Card.Status != "Review" {
		t.Fatalf("a researcher's card to Review: %+v %v", up.Card.Status, err)
	}
	if up, err := s.ReviewRunCard(ctx, run.ID, researcher.Card, board.AnyRound, "bob", true, ""); err != nil || up.Card.Status != "Done" {
		t.Fatalf("accept the researcher's card: %+v %v", up.Card.Status, err)
	}
	// People's cards and an unreviewed runner's go to Done (their
	// dependencies Done first).
	for _, c := range []board.RunCard{coder, reviewer} {
		markDepsDone(t, s, id, c)
		if up, err := s.ChangeCard(ctx, board.CardChange{Card: c.Card, Actor: "alice", Status: ptr("Done")}); err != nil || up.Card.Status != "Done" {
			t.Fatalf("%s (%s) to Done: %+v %v", c.Handle, c.Assignee, up.Card.Status, err)
		}
	}

	// A card in Review of a run that is then stopped moves freely.
	other, _ := newspaperBoard(t, s, "console:gate-stopped")
	stopped, err := s.StartRun(ctx, board.RunStart{Board: other, User: "alice", Trigger: "manual", Runners: allModel, Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	next, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok || next.Run.ID != stopped.ID {
		t.Fatal(ok, err)
	}
	if _, err := s.CompleteRunCard(ctx, next, "Researcher", "findings"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StopRun(ctx, stopped.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if up, err := s.ChangeCard(ctx, board.CardChange{Card: next.Card.ID, Actor: "alice", Status: ptr("Done")}); err != nil || up.Card.Status != "Done" {
		t.Fatalf("after the run: %+v %v", up.Card.Status, err)
	}
}

// markDepsDone moves every card c waits on, and what they wait on, to
// Done by the way a run allows: the review for reviewed runners' cards,
// a plain move for the rest.
func markDepsDone(t *testing.T, s *store.Store, id board.ID, c board.RunCard) {
	t.Helper()
	ctx := context.Background()
	_, cards, err := s.Board(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[board.CardID]board.Card{}
	for _, x := range cards {
		byID[x.ID] = x
	}
	var done func(ids []board.CardID)
	done = func(ids []board.CardID) {
		for _, d := range ids {
			dep := byID[d]
			if dep.Status == "Done" {
				continue
			}
			done(dep.DependsOn)
			up, err := s.ChangeCard(ctx, board.CardChange{Card: d, Actor: "alice", Status: ptr("Review")})
			if err != nil {
				t.Fatalf("%s to Review: %v", dep.Handle, err)
			}
			if _, err := s.ReviewRunCard(ctx, runOf(t, s, id), d, board.AnyRound, "bob", true, ""); err != nil {
				t.Fatalf("accept %s: %v", up.Card.Handle, err)
			}
			dep.Status = "Done"
			byID[d] = dep
		}
	}
	done(c.DependsOn)
}

// runOf is the board's running run.
func runOf(t *testing.T, s *store.Store, id board.ID) board.RunID {
	t.Helper()
	runs, err := s.Runs(context.Background(), id, 1)
	if err != nil || len(runs) != 1 || runs[0].State != board.RunRunning {
		t.Fatalf("runs: %+v %v", runs, err)
	}
	return runs[0].ID
}
