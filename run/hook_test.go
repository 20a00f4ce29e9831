package run_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/adapters/webhook/outbox"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/run"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// toolProfiles are the built-in profiles with every card worked by the
// hook "tool"; the Planner's outputs need no review.
func toolProfiles() []planner.Profile {
	ps := planner.DefaultProfiles()
	for i := range ps {
		ps[i].Runner = "hook:tool"
		if ps[i].Name == "Planner" {
			ps[i].Review = "none"
		}
	}
	return ps
}

// dispatched is a card.dispatched event as the outbox stored it.
type dispatched struct {
	ID   int64
	Body outbox.JobPayload
}

// dispatches reads the card.dispatched rows of the outbox after id after.
func dispatches(t *testing.T, s *store.Store, after int64) []dispatched {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(), `SELECT id, body FROM event_outbox WHERE event_type = 'card.dispatched' AND id > $1 ORDER BY id`, after)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []dispatched
	for rows.Next() {
		var d dispatched
		var body []byte
		if err := rows.Scan(&d.ID, &body); err != nil {
			t.Fatal(err)
		}
		// The outbox keeps a placeholder, never the token; the sender
		// makes the token as it sends the event.
		if !strings.Contains(string(body), `"token":"bnrc-pending:tool:`) || strings.Contains(string(body), "bnrc_") {
			t.Fatalf("the outbox stored %s", body)
		}
		sent, err := board.ExpandRunTokens(body, toolKeys)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(sent, &d.Body); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// toolKeys make the tokens of the cards dispatched to the hook "tool".
var toolKeys = map[string][]byte{"tool": []byte("the key of the tool hook's card tokens")}

// hookWorkers are two replicas' workers dispatching to one outbox.
func hookWorkers(t *testing.T, s *store.Store, endpoints []outbox.Endpoint) (*run.Worker, *run.Worker, *teller) {
	t.Helper()
	ob := outbox.New(outbox.Config{Hooks: map[string][]outbox.Endpoint{"tool": endpoints}, CardTokenKeys: toolKeys, AllowHosts: []string{"tool.example"}}, s, storetest.Logger(t))
	tell := &teller{}
	var ws [2]*run.Worker
	for i := range ws {
		ws[i] = run.NewWorker(s, nil, tell, &budget{}, tell, toolProfiles(), run.Config{Workers: 1, Lease: time.Minute, Poll: 10 * time.Millisecond}, storetest.Logger(t))
		ws[i].UseHooks(s, ob, "https://bobnet.example", toolKeys)
	}
	return ws[0], ws[1], tell
}

// race has both workers dispatch at once, several times each, until
// neither finds a card.
func race(t *testing.T, a, b *run.Worker) {
	t.Helper()
	var wg sync.WaitGroup
	for _, w := range []*run.Worker{a, b, a, b} {
		wg.Go(func() {
			for {
				sent, err := w.DispatchOne(context.Background(), "tool")
				if err != nil {
					t.Error(err)
					return
				}
				if !sent {
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestHookCardsAreDispatchedOncePerRound: two replicas dispatch a board
// whose every card goes to the hook "tool", racing each other at every
// wave. Each card is dispatched once; the tool's outputs (posted with the
// card tokens) move the run on, a later card's dispatch carries the
// outputs it depends on, a card sent back is dispatched once more with
// the reason and a new token (the old one refused), and the run ends
// done with every output on it.
func TestHookCardsAreDispatchedOncePerRound(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s)
	a, b, tell := hookWorkers(t, s, []outbox.Endpoint{{URL: "https://tool.example/bobnet", Secret: "whsec_Y2FsbGJhY2stc2VjcmV0LWZvci10ZXN0cw=="}})
	r, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: a.Runners(), Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.HookNames(); len(got) != 1 || got[0] != "tool" {
		t.Fatalf("hooks = %v", got)
	}

	times := map[string]int{}
	tokens := map[string]string{}
	var last int64
	sentBack := false
	for wave := 0; wave < 20; wave++ {
		race(t, a, b)
		news := dispatches(t, s, last)
		if len(news) == 0 {
			break
		}
		for _, d := range news {
			last = d.ID
			data := d.Body.Data
			h := data.Card.Handle
			times[h]++
			if data.Run.ID != string(r.ID) || data.Callback == nil || !strings.HasPrefix(data.Callback.Token, "bnrc_") ||
				data.Callback.URL != "https://bobnet.example/api/v1/runs/"+string(r.ID)+"/cards/"+data.Card.ID+"/output" {
				t.Fatalf("%s dispatched as %+v", h, data)
			}
			if strings.HasPrefix(data.Card.Title, "Synthesize") || strings.Contains(data.Card.Title, "ynthes") {
				var got []string
				for _, in := range data.Inputs {
					got = append(got, in.Handle+"="+in.Output)
				}
				if len(got) != 3 || !strings.Contains(strings.Join(got, " "), "NEWS-2=found by the tool for NEWS-2") {
					t.Errorf("the synthesis's inputs = %v", got)
				}
			}
			if old, again := tokens[h]; again {
				if data.Feedback != "cite the sources" || data.Callback.Token == old {
					t.Errorf("%s dispatched again with feedback %q, same token %v", h, data.Feedback, data.Callback.Token == old)
				}
				if _, err := s.RunTokenScope(ctx, old); !errors.Is(err, board.ErrRunToken) {
					t.Errorf("the replaced token of %s: %v", h, err)
				}
				_, _, err := s.PostRunOutput(ctx, board.RunOutput{Run: r.ID, Card: board.CardID(data.Card.ID), TokenHash: board.HashRunToken(old), Actor: "hook:tool", Output: "stale"})
				if !errors.Is(err, board.ErrRunToken) {
					t.Errorf("the replaced token of %s posted: %v", h, err)
				}
			}
			tokens[h] = data.Callback.Token
			sc, err := s.RunTokenScope(ctx, data.Callback.Token)
			if err != nil || sc.Run != r.ID || sc.Handle != h || sc.Runner != "hook:tool" {
				t.Fatalf("scope of %s's token: %+v, %v", h, sc, err)
			}
			_, up, err := s.PostRunOutput(ctx, board.RunOutput{Run: r.ID, Card: sc.Card, TokenHash: board.HashRunToken(data.Callback.Token), Actor: sc.Runner, Output: "found by the tool for " + h})
			if err != nil {
				t.Fatal(err)
			}
			// A second output for the same dispatch is refused.
			if _, _, err := s.PostRunOutput(ctx, board.RunOutput{Run: r.ID, Card: sc.Card, TokenHash: board.HashRunToken(data.Callback.Token), Actor: sc.Runner, Output: "again"}); !errors.Is(err, board.ErrNotRunnable) {
				t.Errorf("a second output of %s: %v", h, err)
			}
			switch {
			case up.Card.Status == "Review" && h == "NEWS-2" && !sentBack:
				sentBack = true
				if _, err := s.ReviewRunCard(ctx, r.ID, sc.Card, board.AnyRound, "alice", false, "cite the sources"); err != nil {
					t.Fatal(err)
				}
			case up.Card.Status == "Review":
				if _, err := s.ReviewRunCard(ctx, r.ID, sc.Card, board.AnyRound, "alice", true, ""); err != nil {
					t.Fatal(err)
				}
			case up.Card.Status != "Done":
				t.Fatalf("%s went to %s", h, up.Card.Status)
			}
		}
	}
	cur, err := s.Run(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cur.Cards {
		want := 1
		if c.Handle == "NEWS-2" {
			want = 2
		}
		if times[c.Handle] != want || c.Output != "found by the tool for "+c.Handle || c.Status != "Done" {
			t.Errorf("%s: dispatched %d times (want %d), output %q, %s", c.Handle, times[c.Handle], want, c.Output, c.Status)
		}
	}
	ended, err := a.Sweep(ctx)
	if err != nil || len(ended) != 1 || ended[0].State != board.RunDone {
		t.Fatalf("ended = %+v, %v", ended, err)
	}
	// Once the run has ended, a token of it is refused.
	sc, _ := s.RunTokenScope(ctx, tokens["NEWS-1"])
	if _, _, err := s.PostRunOutput(ctx, board.RunOutput{Run: r.ID, Card: sc.Card, TokenHash: board.HashRunToken(tokens["NEWS-1"]), Actor: "hook:tool", Output: "late"}); !errors.Is(err, board.ErrNotRunnable) {
		t.Errorf("a token of an ended run: %v", err)
	}
	if len(tell.reviewing) != 0 || len(tell.outputs) != 0 {
		t.Errorf("the worker told of outputs it did not keep: %v", tell.reviewing)
	}
}

// TestAHookWithoutCallbacksStopsTheRun: a card whose hook has no
// callbacks cannot be dispatched; each attempt fails with the reason, and
// after three the run stops, saying so.
func TestAHookWithoutCallbacksStopsTheRun(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s)
	a, b, _ := hookWorkers(t, s, nil)
	r, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: a.Runners(), Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	race(t, a, b)
	if got := dispatches(t, s, 0); len(got) != 0 {
		t.Fatalf("dispatched %d events with no callbacks", len(got))
	}
	ended, err := a.Sweep(ctx)
	if err != nil || len(ended) != 1 || ended[0].ID != r.ID || ended[0].State != board.RunStopped ||
		!strings.Contains(ended[0].Reason, "failed after 3 attempts: hook:tool has no callbacks") {
		t.Fatalf("ended = %+v, %v", ended, err)
	}
}
