package run_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/run"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestAnOutputCutInsideACharacterReachesReview: an output longer than
// 256 KiB whose cut falls inside an é is kept cut before the é, as
// valid UTF-8, and the card reaches Review on the first attempt.
func TestAnOutputCutInsideACharacterReachesReview(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s)
	long := strings.Repeat("a", board.MaxOutput-1) + "é and more after the cut"
	if utf8.RuneStart(long[board.MaxOutput]) {
		t.Fatal("the é does not straddle the cut")
	}
	model := plannertest.NewServer(t)
	model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: long} })
	client := planner.NewClient(planner.ClientConfig{BaseURL: model.URL(), Model: "test-model", Timeout: 10 * time.Second}, storetest.Logger(t))
	tell := &teller{}
	w := run.NewWorker(s, client, tell, &budget{}, tell, planner.DefaultProfiles(), run.Config{Workers: 1, Lease: time.Minute, Poll: 10 * time.Millisecond}, storetest.Logger(t))
	r, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: w.Runners(), Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if worked, err := w.WorkOne(ctx); err != nil || !worked {
		t.Fatalf("worked %v, %v", worked, err)
	}
	cur, err := s.Run(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	c := cur.Cards[0]
	if c.Status != "Review" || c.Attempts != 1 || c.Error != "" {
		t.Fatalf("%s: %s after %d attempts, error %q", c.Handle, c.Status, c.Attempts, c.Error)
	}
	if c.Output != strings.Repeat("a", board.MaxOutput-1) || !utf8.ValidString(c.Output) {
		t.Fatalf("output: %d bytes, valid %v", len(c.Output), utf8.ValidString(c.Output))
	}
	if len(tell.reviewing) != 1 {
		t.Fatalf("told reviewing %v", tell.reviewing)
	}
}

// keepNothing is the store with CompleteRunCard failing, as Postgres
// refusing an output would.
type keepNothing struct {
	*store.Store
}

func (keepNothing) CompleteRunCard(context.Context, board.RunJob, string, string) (board.CardUpdate, error) {
	return board.CardUpdate{}, errors.New("ERROR: invalid byte sequence for encoding \"UTF8\" (SQLSTATE 22021)")
}

// TestAnOutputThatCannotBeKeptStopsTheRun: a runner whose output the
// store refuses fails its attempt with the reason instead of leaving the
// card held; after three attempts the run stops, and the thread is told
// which card and why.
func TestAnOutputThatCannotBeKeptStopsTheRun(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s)
	model := plannertest.NewServer(t)
	model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: "findings"} })
	client := planner.NewClient(planner.ClientConfig{BaseURL: model.URL(), Model: "test-model", Timeout: 10 * time.Second}, storetest.Logger(t))
	tell := &teller{}
	w := run.NewWorker(keepNothing{s}, client, tell, &budget{}, tell, planner.DefaultProfiles(), run.Config{Workers: 1, Lease: time.Minute, Poll: 10 * time.Millisecond}, storetest.Logger(t))
	r, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: w.Runners(), Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if worked, err := w.WorkOne(ctx); err != nil || !worked {
			t.Fatalf("attempt %d: worked %v, %v", i+1, worked, err)
		}
	}
	if worked, err := w.WorkOne(ctx); err != nil || worked {
		t.Fatalf("a fourth attempt: worked %v, %v", worked, err)
	}
	ended, err := w.Sweep(ctx)
	if err != nil || len(ended) != 1 || ended[0].ID != r.ID || ended[0].State != board.RunStopped {
		t.Fatalf("sweep: %+v %v", ended, err)
	}
	if want := "NEWS-1 failed after 3 attempts: its output could not be kept: ERROR: invalid byte sequence"; !strings.HasPrefix(ended[0].Reason, want) {
		t.Fatalf("reason %q, want it to start %q", ended[0].Reason, want)
	}
	if len(tell.ended) != 1 || tell.ended[0].Reason != ended[0].Reason {
		t.Fatalf("told %+v", tell.ended)
	}
	// Each attempt is told taken, then failed.
	if len(tell.moved) != 6 {
		t.Fatalf("moves told: %v, want 3 takings and 3 failures", tell.moved)
	}
}

// TestLostLeasesStopTheRun: a card whose runner lost it three times (its
// replica restarted or died each time: the lease ran out, no error kept)
// can be taken no more; the sweep stops the run naming the card and why,
// rather than the run waiting for its deadline.
func TestLostLeasesStopTheRun(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s)
	tell := &teller{}
	w := run.NewWorker(s, nil, tell, &budget{}, tell, planner.DefaultProfiles(), run.Config{Workers: 1, Lease: time.Minute, Poll: 10 * time.Millisecond}, storetest.Logger(t))
	r, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: w.Runners(), Deadline: 23 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const lease = 50 * time.Millisecond
	var card board.CardID
	for i := range 3 {
		job, ok, err := s.ClaimRunCard(ctx, "model", lease)
		if err != nil || !ok || job.Attempt != i+1 || (card != "" && job.Card.ID != card) {
			t.Fatalf("claim %d: %v %v %+v", i+1, ok, err, job.Attempt)
		}
		card = job.Card.ID
		// Held: the run goes on.
		if ended, err := w.Sweep(ctx); err != nil || len(ended) != 0 {
			t.Fatalf("while the card is held: %+v %v", ended, err)
		}
		time.Sleep(2 * lease) // the runner dies: nothing given back
	}
	if job, ok, err := s.ClaimRunCard(ctx, "model", lease); err != nil || ok {
		t.Fatalf("a fourth claim: %v %v %s", ok, err, job.Card.Handle)
	}
	ended, err := w.Sweep(ctx)
	if err != nil || len(ended) != 1 || ended[0].ID != r.ID || ended[0].State != board.RunStopped {
		t.Fatalf("sweep: %+v %v", ended, err)
	}
	if want := "NEWS-1 failed after 3 attempts: its runner stopped while working it (its lease of the card ran out"; !strings.HasPrefix(ended[0].Reason, want) {
		t.Fatalf("reason %q, want it to start %q", ended[0].Reason, want)
	}
	if len(tell.ended) != 1 || !strings.Contains(tell.ended[0].Reason, "NEWS-1") || len(tell.states) != 1 || tell.states[0] != board.RunStopped {
		t.Fatalf("told %+v, observed %v", tell.ended, tell.states)
	}
}
