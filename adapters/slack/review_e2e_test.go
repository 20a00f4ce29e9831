package slack_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
)

// TestSlackReviewButtonNamingNoCard: a review click whose value is not a
// run's card, or names a run nobody started, is answered to the clicker
// alone and decides nothing.
func TestSlackReviewButtonNamingNoCard(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	unknown := "run_" + strings.Repeat("a", 26) + " " + string(board.NewCardID()) + " 0"
	for i, value := range []string{"nonsense", unknown} {
		w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_ALICE", "bobnet_review_accept", value, "1690000000.00000"+strconv.Itoa(i+2)))
	}
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_ALICE", "bobnet_review_sendback", unknown, "1690000000.000004"))
	deadline := time.Now().Add(10 * time.Second)
	for w.slack.count(func(c call) bool {
		return c.Method == "chat.postEphemeral" && strings.Contains(c.Form.Get("text"), "names no card under review")
	}) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("refusals: %+v", w.slack.snapshot())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := w.slack.count(func(c call) bool { return c.Method == "views.open" || c.Method == "chat.update" }); n != 0 {
		t.Fatalf("%d modals or redraws for clicks naming no card", n)
	}
}
