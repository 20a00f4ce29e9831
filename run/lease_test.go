package run_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/run"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestRunnersKeepTheirCardsAndLoseThemWhenTheyStop: two replicas work a
// run with a model slower than the lease. A working runner renews its
// lease, so no card is worked twice while its runner lives; one replica
// stopped in the middle of a card (its context gone, nothing given back,
// as a killed process) loses that card when the lease ends, the other
// takes it over, and the run ends done with every card done once.
func TestRunnersKeepTheirCardsAndLoseThemWhenTheyStop(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s)

	var profiles []planner.Profile
	for _, p := range planner.DefaultProfiles() {
		p.Runner, p.Review = "model", "none"
		profiles = append(profiles, p)
	}
	const lease = 900 * time.Millisecond
	var mu sync.Mutex
	calls := map[string]int{}
	firstCall := make(chan struct{})
	var once sync.Once
	model := plannertest.NewServer(t)
	model.Handle(func(req openai.ChatCompletionRequest) plannertest.Reply {
		handle := strings.TrimSuffix(strings.Fields(plannertest.LastUserMessage(req))[1], ".")
		mu.Lock()
		calls[handle]++
		mu.Unlock()
		once.Do(func() { close(firstCall) })
		// Slower than the lease: only renewing keeps the card.
		return plannertest.Reply{Content: "Findings of " + handle, Delay: 2 * lease}
	})
	client := planner.NewClient(planner.ClientConfig{BaseURL: model.URL(), Model: "test-model", Timeout: time.Minute}, storetest.Logger(t))
	cfg := run.Config{Workers: 2, Lease: lease, Poll: 20 * time.Millisecond}
	tellA, tellB := &teller{}, &teller{}
	a := run.NewWorker(s, client, tellA, &budget{}, tellA, profiles, cfg, storetest.Logger(t))
	b := run.NewWorker(s, client, tellB, &budget{}, tellB, profiles, cfg, storetest.Logger(t))

	r, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: a.Runners(), Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// a alone takes the first wave and is stopped while the model works.
	actx, stopA := context.WithCancel(ctx)
	aDone := make(chan struct{})
	go func() { defer close(aDone); _ = a.Run(actx) }()
	<-firstCall
	stopA()
	<-aDone
	var taken []string
	for _, c := range mustRun(t, s, r.ID).Cards {
		if c.Attempts > 0 {
			taken = append(taken, c.Handle)
		}
	}
	if len(taken) == 0 {
		t.Fatal("a stopped holding no card")
	}

	bctx, stopB := context.WithCancel(ctx)
	bDone := make(chan struct{})
	go func() { defer close(bDone); _ = b.Run(bctx) }()
	defer func() { stopB(); <-bDone }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := mustRun(t, s, r.ID)
		if got.State != board.RunRunning {
			if got.State != board.RunDone {
				t.Fatalf("run ended %s: %s", got.State, got.Reason)
			}
			for _, c := range got.Cards {
				want := 1
				if containsString(taken, c.Handle) {
					want = 2 // a's attempt, then b's
				}
				if c.Attempts != want || calls[c.Handle] != want {
					t.Errorf("%s: %d attempts, %d model calls; want %d", c.Handle, c.Attempts, calls[c.Handle], want)
				}
				if c.Status != "Done" || c.Output != "Findings of "+c.Handle {
					t.Errorf("%s: %s with output %q", c.Handle, c.Status, c.Output)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run still going: %+v", got.Cards)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mustRun(t *testing.T, s *store.Store, id board.RunID) board.Run {
	t.Helper()
	r, err := s.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
