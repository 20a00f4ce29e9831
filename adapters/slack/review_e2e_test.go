package slack_test

import (
	"context"
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

// TestSlackReviewButtonsInTwoWorkspaces: with BobNet installed in two
// workspaces, a run's card is announced with its workspace's token, a
// click from the other workspace (same channel id, same message) decides
// nothing, and its own workspace's Accept decides it and redraws the
// announcement with that workspace's token.
func TestSlackReviewButtonsInTwoWorkspaces(t *testing.T) {
	t.Parallel()
	w := newTeamsWorld(t)
	tokA, tokB := w.install(t, "T_A"), w.install(t, "T_B")
	const thread = "1690000000.000001"
	w.post(t, "/slack/events", "application/json", teamMention("T_A", "EvA1", "C0123", thread, "plan our daily research newspaper"))
	prev := w.slack.waitFor(t, "team A's preview", isTeamPreview(thread))
	pid := proposalID.FindStringSubmatch(prev.Form.Get("blocks"))[1]
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", teamClick("T_A", "U_ALICE", "bobnet_approve", pid, "C0123", prev.TS, thread))
	w.slack.waitFor(t, "approved", func(c teamCall) bool { return c.Method == "chat.update" && c.Form.Get("ts") == prev.TS })

	ctx := context.Background()
	if _, err := w.env.Engine.StartRun(ctx, board.Channel{Source: board.SourceSlack, ID: "T_A/C0123"}, "U_ALICE", ""); err != nil {
		t.Fatal(err)
	}
	job := w.env.WorkForReview(t, "today's topics")
	ann := w.slack.waitFor(t, "announcement", func(c teamCall) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.Form.Get("blocks"), "bobnet_review_accept")
	})
	if ann.Token != tokA || ann.Form.Get("channel") != "C0123" || ann.Form.Get("thread_ts") != thread {
		t.Fatalf("announcement in %q thread %q with %q", ann.Form.Get("channel"), ann.Form.Get("thread_ts"), ann.Token)
	}
	value := string(job.Run.ID) + " " + string(job.Card.ID) + " 0"
	if !strings.Contains(ann.Form.Get("blocks"), `"value":"`+value+`"`) {
		t.Fatalf("announcement's buttons: %s", ann.Form.Get("blocks"))
	}

	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", teamClick("T_B", "U_ALICE", "bobnet_review_accept", value, "C0123", ann.TS, thread))
	refusal := w.slack.waitFor(t, "refusal in team B", func(c teamCall) bool { return c.Method == "chat.postEphemeral" })
	if refusal.Token != tokB || refusal.Form.Get("text") != "That button names no card under review; nothing was changed." { // as for a card nobody has
		t.Fatalf("refusal %q with %q", refusal.Form.Get("text"), refusal.Token)
	}
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", teamClick("T_A", "U_ALICE", "bobnet_review_accept", value, "C0123", ann.TS, thread))
	redraw := w.slack.waitFor(t, "redraw", func(c teamCall) bool { return c.Method == "chat.update" && c.Form.Get("ts") == ann.TS })
	if redraw.Token != tokA || redraw.Form.Get("channel") != "C0123" || !strings.Contains(redraw.Form.Get("blocks"), "was accepted by") {
		t.Fatalf("redraw %v with %q", redraw.Form, redraw.Token)
	}
	r, err := w.env.Store.Run(ctx, job.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Cards {
		if c.Card == job.Card.ID && c.Status != "Done" {
			t.Fatalf("accepted card is %s", c.Status)
		}
	}
}
