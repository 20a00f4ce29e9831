package slack

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

func (inertEngine) AuthorizeReview(context.Context, board.ReviewRef, string) (bot.ReviewPlace, error) {
	return bot.ReviewPlace{}, bot.ErrNotFound
}

func (inertEngine) ReviewRunCard(context.Context, board.RunID, board.CardID, int, string, bool, string) (board.CardUpdate, error) {
	return board.CardUpdate{}, bot.ErrNotFound
}

// TestReviewValueRoundTrip: a review button's value reads back as the
// card it was drawn for, and anything else names no card.
func TestReviewValueRoundTrip(t *testing.T) {
	ref := board.ReviewRef{Run: board.RunID("run_" + strings.Repeat("a", 26)), Card: board.NewCardID(), Round: 2}
	got, err := parseReviewValue(reviewValue(ref))
	if err != nil || got != ref {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "x y 1", string(ref.Run) + " " + string(ref.Card), string(ref.Run) + " " + string(ref.Card) + " -1",
		string(ref.Run) + " " + string(ref.Card) + " 1 extra", "p_1 " + string(ref.Card) + " 0"} {
		if _, err := parseReviewValue(bad); !errors.Is(err, errBadReviewValue) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
