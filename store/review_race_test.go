package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestReviewsAtOnceDecideOnce: reviews of one card in Review sent at the
// same moment (two people clicking Accept, or Accept and Send back) make
// one decision; the rest find the card out of Review.
func TestReviewsAtOnceDecideOnce(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	run, job := inReview(t, s, "console:review-race", "draft")
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.ReviewRunCard(ctx, run.ID, job.Card.ID, board.AnyRound, "bob", i%2 == 0 || i < n/2, "cite sources")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	decided := 0
	for err := range errs {
		switch {
		case err == nil:
			decided++
		case !errors.Is(err, board.ErrNotRunnable):
			t.Errorf("review: %v", err)
		}
	}
	if decided != 1 {
		t.Fatalf("%d reviews decided, want 1", decided)
	}
}
