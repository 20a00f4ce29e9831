package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestACardInReviewMovesOnlyThroughItsReview: while its run runs, a card
// in Review is moved by nothing but its review decision: a change of its
// status from any caller (a person, the page, an approved plan) is
// refused with the review route named, and the card stays in Review;
// other fields may change. Once the run has ended the card moves freely.
func TestACardInReviewMovesOnlyThroughItsReview(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s, "console:gate")
	run, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: allModel, Deadline: time.Hour})
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
	if up, err := s.ReviewRunCard(ctx, run.ID, card, "bob", true, ""); err != nil || up.Card.Status != "Done" {
		t.Fatalf("accept: %+v %v", up.Card.Status, err)
	}

	// Another card in Review, then the run is stopped: it moves freely.
	next, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := s.CompleteRunCard(ctx, next, "Researcher", "findings"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StopRun(ctx, run.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if up, err := s.ChangeCard(ctx, board.CardChange{Card: next.Card.ID, Actor: "alice", Status: ptr("Done")}); err != nil || up.Card.Status != "Done" {
		t.Fatalf("after the run: %+v %v", up.Card.Status, err)
	}
}
