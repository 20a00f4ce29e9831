package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/run"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// flatBoard makes a board of n Researcher cards that wait on nothing, in
// channel, named name (its key is the name's first four letters).
func flatBoard(t *testing.T, s *store.Store, channel, name string, n int) board.ID {
	t.Helper()
	cards := make([]map[string]any, n)
	for i := range cards {
		cards[i] = map[string]any{"temp_id": fmt.Sprintf("c%d", i+1), "title": fmt.Sprintf("Research topic %d", i+1),
			"body": "Find and summarize the sources.", "assignee": "Researcher", "status": "Ready"}
	}
	env, _ := json.Marshal(map[string]any{"kind": "propose_actions", "answer": "A board.", "actions": []any{map[string]any{
		"type": "create_board_with_cards", "board": map[string]any{"name": name, "goal": "Research in parallel."}, "cards": cards,
	}}})
	res := planner.Check(env, plan.Options{Profiles: planner.ProfileNames(planner.DefaultProfiles())})
	if !res.Valid {
		t.Fatalf("plan: %+v", res.Errors)
	}
	out, err := s.Execute(context.Background(), board.Execution{ProposalID: board.ProposalID("p_" + strings.ReplaceAll(channel, ":", "_")), Channel: channel, ApprovedBy: "alice", Plan: *res.Plan})
	if err != nil {
		t.Fatal(err)
	}
	return out.BoardID
}

// unreviewed are the built-in profiles, each worked by the model with no
// review, so a run ends by itself.
func unreviewed() []planner.Profile {
	var profiles []planner.Profile
	for _, p := range planner.DefaultProfiles() {
		p.Runner, p.Review = "model", "none"
		profiles = append(profiles, p)
	}
	return profiles
}

// spent is a model budget's refusal that says when the budget resets.
type spent struct{ at time.Time }

func (e spent) Error() string       { return "over the model budget: 100 of 100 tokens used today" }
func (e spent) ResetsAt() time.Time { return e.at }

// channelBudgets are budgets per channel, spent until a time, counting
// how often each channel was asked.
type channelBudgets struct {
	mu    sync.Mutex
	until map[string]time.Time
	asked map[string]int
}

func (b *channelBudgets) ModelBudget(_ context.Context, channel string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked[channel]++
	if at, ok := b.until[channel]; ok && time.Now().Before(at) {
		return spent{at}
	}
	return nil
}

func (b *channelBudgets) ChargeModel(context.Context, string, int) {}

func (b *channelBudgets) askedOf(channel string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.asked[channel]
}

// handles records the cards the model was asked to work, in order.
type handles struct {
	mu  sync.Mutex
	all []string
}

func (h *handles) serve(t *testing.T, delay time.Duration) *plannertest.Server {
	model := plannertest.NewServer(t)
	model.Handle(func(req openai.ChatCompletionRequest) plannertest.Reply {
		handle := strings.TrimSuffix(strings.Fields(plannertest.LastUserMessage(req))[1], ".")
		h.mu.Lock()
		h.all = append(h.all, handle)
		h.mu.Unlock()
		return plannertest.Reply{Content: "Findings of " + handle, Delay: delay}
	})
	return model
}

func (h *handles) snapshot() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.all...)
}

// waitRun waits until the run is in state.
func waitRun(t *testing.T, s *store.Store, id board.RunID, state string, within time.Duration) board.Run {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r, err := s.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.State == state {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d is %s after %s, want %s", r.Number, r.State, within, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestASpentBudgetHoldsOnlyItsChannel: channel A has spent its model
// budget; its run, started first, waits, and the runners work channel
// B's run, started after, to its end meanwhile, asking A's budget only
// as often as there are runners, not once a card and poll. When A's
// budget resets, its cards are worked and its run ends too.
//
// Not parallel: it times runners, which other tests' load would slow.
func TestASpentBudgetHoldsOnlyItsChannel(t *testing.T) {
	s := storetest.NewStore(t)
	ctx := context.Background()
	alpha := flatBoard(t, s, "console:alpha", "Alpha Desk", 6)
	bravo := flatBoard(t, s, "console:bravo", "Bravo Desk", 2)
	resets := time.Now().Add(5 * time.Second)
	budgets := &channelBudgets{until: map[string]time.Time{"console:alpha": resets}, asked: map[string]int{}}
	var asked handles
	model := asked.serve(t, 0)
	client := planner.NewClient(planner.ClientConfig{BaseURL: model.URL(), Model: "test-model", Timeout: 10 * time.Second}, storetest.Logger(t))
	tell := &teller{}
	w := run.NewWorker(s, client, tell, budgets, tell, unreviewed(), run.Config{Workers: 2, Lease: time.Minute, Poll: 20 * time.Millisecond}, storetest.Logger(t))
	ra, err := s.StartRun(ctx, board.RunStart{Board: alpha, User: "alice", Trigger: "manual", Runners: w.Runners(), Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := s.StartRun(ctx, board.RunStart{Board: bravo, User: "bob", Trigger: "manual", Runners: w.Runners(), Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })

	waitRun(t, s, rb.ID, board.RunDone, 10*time.Second)
	if time.Now().After(resets) {
		t.Fatal("bravo's run took longer than alpha's budget took to reset: it waited on alpha")
	}
	if a, err := s.Run(ctx, ra.ID); err != nil || a.State != board.RunRunning {
		t.Fatalf("alpha's run: %+v %v", a.State, err)
	}
	for _, h := range asked.snapshot() {
		if strings.HasPrefix(h, "ALPH-") {
			t.Fatalf("the model worked %s while alpha's budget was spent", h)
		}
	}
	if n := budgets.askedOf("console:alpha"); n == 0 || n > 2 {
		t.Errorf("alpha's budget was asked %d times while it was spent, want once a runner at most", n)
	}
	if len(tell.waiting) == 0 || !strings.HasPrefix(tell.waiting[0], "ALPH-") {
		t.Errorf("told waiting: %v", tell.waiting)
	}

	// The budget resets: alpha's cards come back by themselves.
	final := waitRun(t, s, ra.ID, board.RunDone, time.Until(resets)+10*time.Second)
	for _, c := range final.Cards {
		if c.Status != "Done" || c.Attempts != 1 {
			t.Errorf("%s: %s after %d attempts", c.Handle, c.Status, c.Attempts)
		}
	}
}

// TestASmallRunIsNotQueuedBehindABigOne: the runs take turns. A run of
// two cards started while a run of 64 is being worked has its first
// card taken by the next claim, not after the 64: with one runner, at
// most the card already being worked comes before it.
//
// Not parallel, so its load does not slow the parallel tests (the idle
// pollers' test counts connections).
func TestASmallRunIsNotQueuedBehindABigOne(t *testing.T) {
	ctx := context.Background()

	t.Run("claims", func(t *testing.T) {
		t.Parallel()
		s := storetest.NewStore(t)
		big := flatBoard(t, s, "console:big", "Bigger Desk", plan.MaxCards)
		small := flatBoard(t, s, "console:small", "Smaller Desk", 2)
		start := func(id board.ID) {
			if _, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: allModel(), Deadline: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		claim := func() string {
			t.Helper()
			job, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			return job.Card.Handle
		}
		start(big)
		if h := claim(); h != "BIGG-1" {
			t.Fatalf("first claim %s", h)
		}
		start(small)
		var got []string
		for range 4 {
			got = append(got, claim())
		}
		if want := []string{"SMAL-1", "BIGG-2", "SMAL-2", "BIGG-3"}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("claims after the small run started: %v, want %v", got, want)
		}
	})

	t.Run("worker", func(t *testing.T) {
		t.Parallel()
		s := storetest.NewStore(t)
		big := flatBoard(t, s, "console:big", "Bigger Desk", plan.MaxCards)
		small := flatBoard(t, s, "console:small", "Smaller Desk", 2)
		var asked handles
		model := asked.serve(t, 30*time.Millisecond)
		client := planner.NewClient(planner.ClientConfig{BaseURL: model.URL(), Model: "test-model", Timeout: 10 * time.Second}, storetest.Logger(t))
		tell := &teller{}
		const poll = 200 * time.Millisecond
		w := run.NewWorker(s, client, tell, &budget{}, tell, unreviewed(), run.Config{Workers: 1, Lease: time.Minute, Poll: poll}, storetest.Logger(t))
		if _, err := s.StartRun(ctx, board.RunStart{Board: big, User: "alice", Trigger: "manual", Runners: w.Runners(), Deadline: time.Hour}); err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = w.Run(runCtx) }()
		t.Cleanup(func() { cancel(); <-done })
		for len(asked.snapshot()) < 3 {
			time.Sleep(5 * time.Millisecond)
		}
		before := len(asked.snapshot())
		rs, err := s.StartRun(ctx, board.RunStart{Board: small, User: "bob", Trigger: "manual", Runners: w.Runners(), Deadline: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		waitRun(t, s, rs.ID, board.RunDone, 20*time.Second)
		after := asked.snapshot()[before:]
		first := -1
		for i, h := range after {
			if strings.HasPrefix(h, "SMAL-") {
				first = i
				break
			}
		}
		if first < 0 || first > 1 {
			t.Fatalf("after the small run started the model worked %v: its first card came %d cards late", after, first)
		}
	})
}

// allModel has the model work every card, with review.
func allModel() plan.Runners { return plan.Runners{Others: plan.Runner{Name: "model"}} }
