package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestRunTokensAreMadeAsTheyAreSent: a card.dispatched body holds a
// placeholder; expanding it puts in the token its hook's key makes, the
// same every time (a retry sends the same bytes), different for another
// dispatch of the card, and never for text of the card shaped like a
// placeholder.
func TestRunTokensAreMadeAsTheyAreSent(t *testing.T) {
	t.Parallel()
	keys := map[string][]byte{"tool": []byte("key one"), "other": []byte("key two")}
	ph := board.RunTokenPlaceholder("tool", "run_aaaa", "c_bbbb", "h_cccc")
	body, _ := json.Marshal(map[string]any{
		"card":     map[string]string{"body": `"token":"` + ph + `"`},
		"callback": map[string]string{"url": "https://bobnet.example/x", "token": ph},
	})
	got, err := board.ExpandRunTokens(body, keys)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Card     struct{ Body string }
		Callback struct{ Token string }
	}
	if err := json.Unmarshal(got, &out); err != nil {
		t.Fatal(err)
	}
	want := board.RunToken(keys["tool"], "run_aaaa", "c_bbbb", "h_cccc")
	if out.Callback.Token != want || !strings.HasPrefix(want, "bnrc_") {
		t.Fatalf("token %q, want %q", out.Callback.Token, want)
	}
	if !strings.Contains(out.Card.Body, ph) {
		t.Fatalf("the card's text was expanded: %q", out.Card.Body)
	}
	if again, _ := board.ExpandRunTokens(body, keys); string(again) != string(got) {
		t.Fatal("a second expansion differs")
	}
	for name, other := range map[string]string{
		"another holder": board.RunToken(keys["tool"], "run_aaaa", "c_bbbb", "h_dddd"),
		"another card":   board.RunToken(keys["tool"], "run_aaaa", "c_eeee", "h_cccc"),
		"another key":    board.RunToken(keys["other"], "run_aaaa", "c_bbbb", "h_cccc"),
	} {
		if other == want {
			t.Errorf("%s makes the same token", name)
		}
	}
	if _, err := board.ExpandRunTokens(body, map[string][]byte{"other": keys["other"]}); err == nil || !strings.Contains(err.Error(), `"tool"`) {
		t.Fatalf("without the hook's key: %v", err)
	}
}

// TestNoCardIsTakenPastItsRunsDeadline: a hook's card is held until its
// run's deadline; past it, until the sweeper times the run out, the card
// is not dispatched again (a second and third card.dispatched of the same
// round, each with a new token, the soak saw), nor any card taken.
func TestNoCardIsTakenPastItsRunsDeadline(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s, "deadline")
	hooks := plan.Runners{Others: plan.Runner{Name: "hook:tool"}}
	if _, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: hooks, Deadline: 500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	sent := 0
	dispatch := func(job board.RunJob) (string, []board.OutboundEvent, error) {
		sent++
		return "tok_" + job.Holder, []board.OutboundEvent{{MsgID: "msg_" + job.Holder, Type: "card.dispatched", Endpoints: []string{"https://tool.example/in"}, Body: []byte(`{}`)}}, nil
	}
	if _, ok, err := s.DispatchRunCard(ctx, "hook:tool", dispatch); err != nil || !ok {
		t.Fatalf("first dispatch: %v %v", ok, err)
	}
	time.Sleep(700 * time.Millisecond) // past the deadline; no sweep yet
	for range 3 {
		if job, ok, err := s.DispatchRunCard(ctx, "hook:tool", dispatch); err != nil || ok {
			t.Fatalf("dispatched past the run's deadline: %s, %v %v", job.Card.Handle, ok, err)
		}
	}
	if sent != 1 {
		t.Fatalf("%d dispatches, want the one before the deadline", sent)
	}
}
