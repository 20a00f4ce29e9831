package bot

import (
	"context"
	"errors"
	"fmt"

	"github.com/bobnet/bobnet/board"
)

// Review decisions, as ReviewRef.Decision says them.
const (
	ReviewAccepted = "accepted"
	ReviewSentBack = "sent_back"
)

// MaxReviewReason is the longest reason a send-back control takes, in
// characters.
const MaxReviewReason = 1000

// ErrStaleReview means a review control belongs to an earlier round of
// its card: the card was sent back and worked again since. It is the
// store's board.ErrStaleReview, so a decision the store refuses as stale
// matches it too.
var ErrStaleReview = board.ErrStaleReview

// ReviewPlace is where a card under review is announced and decided: its
// run, the card as the run has it, and the board's thread.
type ReviewPlace struct {
	Run    board.Run
	Card   board.RunCard
	Thread board.Thread
}

// AuthorizeReview checks a review control before anything is decided: the
// run and card exist, the card waits in Review in the announced round,
// and user may decide it under the channel's policy. The place is
// returned with a refusal too (once the run was read), so a caller can
// first check the control was used where the card was announced.
// ReviewRunCard checks again when it decides. Errors: ErrNotFound,
// ErrStaleReview, board.ErrNotRunnable, ErrForbidden (a refusal
// ReviewErrorText says), ErrUnavailable, ErrNoRuns.
func (e *Engine) AuthorizeReview(ctx context.Context, ref board.ReviewRef, user string) (ReviewPlace, error) {
	rv := e.deps.Runs
	if rv == nil {
		return ReviewPlace{}, ErrNoRuns
	}
	r, err := rv.Run(ctx, ref.Run)
	if errors.Is(err, board.ErrNotFound) {
		return ReviewPlace{}, fmt.Errorf("run %s: %w", ref.Run, ErrNotFound)
	}
	if err != nil {
		return ReviewPlace{}, unavailable("read the run", err)
	}
	cs, err := e.cardStore()
	if err != nil {
		return ReviewPlace{}, err
	}
	b, _, err := cs.Board(ctx, r.Board)
	if err != nil {
		return ReviewPlace{}, unavailable("read the board", err)
	}
	place := ReviewPlace{Run: r, Thread: board.Thread{Channel: channelOf(b.Channel), ID: b.Thread}}
	found := false
	for _, c := range r.Cards {
		if c.Card == ref.Card {
			place.Card, found = c, true
		}
	}
	switch {
	case !found:
		return place, fmt.Errorf("card %s in run %s: %w", ref.Card, ref.Run, ErrNotFound)
	case r.State != board.RunRunning:
		return place, fmt.Errorf("%w: the run has ended", board.ErrNotRunnable)
	case place.Card.Rounds != ref.Round:
		return place, ErrStaleReview
	case place.Card.Status != "Review":
		return place, fmt.Errorf("%w: the card is in %s, not Review", board.ErrNotRunnable, place.Card.Status)
	}
	return place, e.mayReview(ctx, b, r, user)
}
