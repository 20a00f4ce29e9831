package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestStaleReviewChangesNothing: a decision shown on round 0 of a card
// (its first output) that arrives after the card was sent back and
// worked again decides nothing, accept or send back: ErrStaleReview, the
// card stays in Review with its newer output, and no audit line is
// written. The decision on the current round goes through.
func TestStaleReviewChangesNothing(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	s := store.New(pool, storetest.Logger(t))
	ctx := context.Background()
	run, job := inReview(t, s, "console:review-round", "draft")
	if _, err := s.ReviewRunCard(ctx, run.ID, job.Card.ID, 0, "alice", false, "cite sources"); err != nil {
		t.Fatalf("send back round 0: %v", err)
	}
	if again := workOne(t, s, "Planner", "better"); again.Card.ID != job.Card.ID {
		t.Fatalf("worked %s, want %s again", again.Card.Handle, job.Card.Handle)
	}
	audits := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'run_card_reviewed'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := audits()
	for _, accept := range []bool{true, false} {
		if _, err := s.ReviewRunCard(ctx, run.ID, job.Card.ID, 0, "bob", accept, "stale"); !errors.Is(err, board.ErrStaleReview) {
			t.Fatalf("round-0 decision (accept %v) on round 1: %v", accept, err)
		}
	}
	r, err := s.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Cards {
		if c.Card == job.Card.ID && (c.Status != "Review" || c.Rounds != 1 || c.Output != "better" || c.Feedback != "cite sources") {
			t.Fatalf("after stale decisions: %+v", c)
		}
	}
	if got := audits(); got != before {
		t.Fatalf("stale decisions wrote %d audit lines", got-before)
	}
	up, err := s.ReviewRunCard(ctx, run.ID, job.Card.ID, 1, "bob", true, "")
	if err != nil || up.Card.Status != "Done" {
		t.Fatalf("round-1 accept: %+v %v", up.Card.Status, err)
	}
}
