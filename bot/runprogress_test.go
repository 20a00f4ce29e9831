package bot_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/run"
	"github.com/bobnet/bobnet/store/storetest"
)

// progress is one RunProgress call as the shower saw it.
type progress struct {
	at       time.Time
	p        bot.RunProgress
	statuses map[string]bot.TaskStatus // by handle
}

// shower records the run progress it is shown; while hold is set, each
// call waits for it to be closed first, as a slow surface would.
type shower struct {
	bottest.Poster
	mu    sync.Mutex
	calls []progress
	hold  chan struct{}
}

func (s *shower) RunProgress(ctx context.Context, p bot.RunProgress) error {
	at := time.Now() // when the call came, however long it takes
	s.mu.Lock()
	hold := s.hold
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	st := map[string]bot.TaskStatus{}
	for _, c := range p.Run.Cards {
		st[c.Handle] = bot.TaskStatusOf(c.Status, c.Error != "")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, progress{at: at, p: p, statuses: st})
	return nil
}

func (s *shower) snapshot() []progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]progress(nil), s.calls...)
}

// waitEnded waits for the call that says the run ended.
func (s *shower) waitEnded(t *testing.T) []progress {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		calls := s.snapshot()
		if n := len(calls); n > 0 && calls[n-1].p.Ended {
			return calls
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the run's end was never shown: %+v", s.snapshot())
	return nil
}

type noObserver struct{}

func (noObserver) RunEnded(string)          {}
func (noObserver) CardWorked(time.Duration) {}

// runEnv is an engine whose console surface shows run progress, and a
// runs worker telling it, on a board made in console:news.
func runEnv(t *testing.T, model func(openai.ChatCompletionRequest) plannertest.Reply) (*bottest.Env, *shower, board.ID) {
	t.Helper()
	s := &shower{}
	env := bottest.New(t, bottest.WithConsole(bot.Registration{Poster: s, Runs: s}))
	env.Model.Handle(model)
	client := planner.NewClient(planner.ClientConfig{BaseURL: env.Model.URL(), Model: "test-model", Backoff: time.Millisecond, Timeout: 10 * time.Second, MaxRetries: -1}, storetest.Logger(t))
	w := run.NewWorker(env.Store, client, env.Engine, env.Engine, noObserver{}, planner.DefaultProfiles(),
		run.Config{Workers: 2, Lease: time.Minute, Poll: 20 * time.Millisecond}, storetest.Logger(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return env, s, env.NewspaperBoard(t, "p_progress", "console:news")
}

var news = board.Channel{Source: board.SourceConsole, ID: "news"}

// checkOrder checks calls: at most one a second, for the board's thread,
// Ended only on the last, and no card going back from complete.
func checkOrder(t *testing.T, calls []progress) {
	t.Helper()
	for i, c := range calls {
		if c.p.Thread != (board.Thread{Channel: news, ID: "T1"}) || c.p.BoardTitle != "Daily Research Newspaper" {
			t.Errorf("call %d: thread %+v, title %q", i, c.p.Thread, c.p.BoardTitle)
		}
		if c.p.Ended != (i == len(calls)-1) {
			t.Errorf("call %d of %d: ended %v", i, len(calls), c.p.Ended)
		}
		if i == 0 {
			continue
		}
		if gap := c.at.Sub(calls[i-1].at); gap < bot.RunProgressEvery-50*time.Millisecond {
			t.Errorf("calls %d and %d %s apart, want at most one a second", i-1, i, gap)
		}
		for h, st := range calls[i-1].statuses {
			if st == bot.TaskComplete && c.statuses[h] != bot.TaskComplete {
				t.Errorf("call %d: %s went from complete to %s", i, h, c.statuses[h])
			}
		}
	}
}

// A run shows as one progress its cards moving as runners and people
// work them, coalesced, ending with every task complete and the edition.
func TestRunProgressReachesComplete(t *testing.T) {
	t.Parallel()
	env, s, _ := runEnv(t, func(req openai.ChatCompletionRequest) plannertest.Reply {
		// A card takes the model a while, so the run goes over a few
		// seconds and its progress moves in between.
		return plannertest.Reply{Content: "## Findings\n\nWritten for " + strings.Fields(plannertest.LastUserMessage(req))[1], Delay: 400 * time.Millisecond}
	})
	ctx := context.Background()
	r, err := env.Engine.StartRun(ctx, news, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	// People accept the runners' work and do the Coder's cards.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		cur, err := env.Store.Run(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.State != board.RunRunning {
			break
		}
		for _, c := range cur.Cards {
			switch {
			case c.Status == "Review":
				if _, err := env.Engine.ReviewRunCard(ctx, r.ID, c.Card, board.AnyRound, "alice", true, ""); err != nil {
					t.Fatal(err)
				}
			case c.Runner == "" && c.Status != "Done" && ready(cur, c):
				if _, err := env.Engine.MoveCard(ctx, news, "carol", c.Handle, "Done"); err != nil {
					t.Fatal(err)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	calls := s.waitEnded(t)
	t.Logf("%d progress calls", len(calls))
	checkOrder(t, calls)
	if len(calls) < 3 {
		t.Errorf("%d calls, want the start, moves and the end", len(calls))
	}
	first, last := calls[0], calls[len(calls)-1]
	for h, st := range first.statuses {
		if st == bot.TaskComplete || st == bot.TaskError {
			t.Errorf("at the start %s is %s", h, st)
		}
	}
	if last.p.Run.State != board.RunDone || len(last.statuses) != 10 || last.p.EditionURL != bot.RunURL("http://bobnet.test", last.p.Run) {
		t.Fatalf("last call: state %s, %d cards, edition %q", last.p.Run.State, len(last.statuses), last.p.EditionURL)
	}
	for h, st := range last.statuses {
		if st != bot.TaskComplete {
			t.Errorf("at the end %s is %s", h, st)
		}
	}
	inProgress := false
	for _, c := range calls {
		for _, st := range c.statuses {
			inProgress = inProgress || st == bot.TaskInProgress
		}
	}
	if !inProgress {
		t.Error("no call showed a card in progress")
	}
}

// ready says whether every card c depends on is Done.
func ready(r board.Run, c board.RunCard) bool {
	status := map[board.CardID]string{}
	for _, x := range r.Cards {
		status[x.Card] = x.Status
	}
	for _, d := range c.DependsOn {
		if status[d] != "Done" {
			return false
		}
	}
	return true
}

// A card its runner fails shows as an error, and the run's end (stopped)
// keeps it so; a surface that takes its time holds no runner meanwhile.
func TestRunProgressShowsAFailedCardAndNeverHoldsTheRun(t *testing.T) {
	t.Parallel()
	env, s, _ := runEnv(t, func(openai.ChatCompletionRequest) plannertest.Reply {
		return plannertest.Reply{Status: http.StatusBadRequest, Message: "no such model"}
	})
	release := make(chan struct{})
	s.mu.Lock()
	s.hold = release
	s.mu.Unlock()
	ctx := context.Background()
	r, err := env.Engine.StartRun(ctx, news, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	// The run stops (NEWS-1 failed three times) while the surface is
	// still showing its start.
	deadline := time.Now().Add(20 * time.Second)
	for {
		cur, err := env.Store.Run(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.State == board.RunStopped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not stop while its progress was held: %+v", cur)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(s.snapshot()); n != 0 {
		t.Fatalf("%d calls finished while the surface held the first", n)
	}
	close(release)
	calls := s.waitEnded(t)
	checkOrder(t, calls)
	last := calls[len(calls)-1]
	if last.p.Run.State != board.RunStopped || last.statuses["NEWS-1"] != bot.TaskError {
		t.Fatalf("last call: state %s, NEWS-1 %s", last.p.Run.State, last.statuses["NEWS-1"])
	}
}
