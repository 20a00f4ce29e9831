package bot_test

import (
	"context"
	"errors"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
)

// TestStaleReviewControlDecidesNothing: a review control of round 0 is
// authorized, and before its decision lands the card is sent back and
// worked again (round 1). The decision is refused with ErrStaleReview
// (said as such in chat, not as the store being unavailable), the card
// stays in Review with its new output, and the thread hears nothing of
// it; the control of round 1 then decides.
func TestStaleReviewControlDecidesNothing(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	env.RunningNewspaper(t, "p_review_round", "console:round")
	job := env.WorkForReview(t, "first draft")
	ref := board.ReviewRef{Run: job.Run.ID, Card: job.Card.ID, Handle: job.Card.Handle, Round: 0}
	if _, err := env.Engine.AuthorizeReview(ctx, ref, "alice"); err != nil {
		t.Fatalf("authorize the round-0 control: %v", err)
	}
	// Meanwhile: sent back (by the round-0 control of someone else) and
	// worked again.
	if _, err := env.Engine.ReviewRunCard(ctx, job.Run.ID, job.Card.ID, 0, "alice", false, "cite sources"); err != nil {
		t.Fatal(err)
	}
	again := env.WorkForReview(t, "second draft")
	if again.Card.ID != job.Card.ID {
		t.Fatalf("worked %s, want %s again", again.Card.Handle, job.Card.Handle)
	}
	_, err := env.Engine.ReviewRunCard(ctx, job.Run.ID, job.Card.ID, ref.Round, "alice", true, "")
	if !errors.Is(err, bot.ErrStaleReview) || errors.Is(err, bot.ErrUnavailable) {
		t.Fatalf("the round-0 accept on round 1: %v", err)
	}
	if got := bot.Explain(err); got != "That review is of an earlier output: the card was sent back and worked again since. Review its latest output." {
		t.Fatalf("said as %q", got)
	}
	r, err := env.Store.Run(ctx, job.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Cards {
		if c.Card == job.Card.ID && (c.Status != "Review" || c.Rounds != 1 || c.Output != "second draft") {
			t.Fatalf("after the stale accept: %+v", c)
		}
	}
	if up, err := env.Engine.ReviewRunCard(ctx, job.Run.ID, job.Card.ID, 1, "alice", true, ""); err != nil || up.Card.Status != "Done" {
		t.Fatalf("the round-1 accept: %+v %v", up.Card.Status, err)
	}
}
