package bot_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

// stubPlanner returns a parsed plan at once: the benchmark measures the
// engine, not a model.
type stubPlanner struct{ out planner.Outcome }

func (s stubPlanner) Plan(context.Context, planner.PromptInput, plan.Options) (planner.Outcome, error) {
	return s.out, nil
}

// previewPoster signals each posted preview.
type previewPoster struct{ posted chan struct{} }

func (p previewPoster) Reply(context.Context, board.Thread, board.Reply) error { return nil }
func (p previewPoster) PostPreview(context.Context, board.Proposal) (board.MessageRef, error) {
	p.posted <- struct{}{}
	return "m", nil
}
func (p previewPoster) UpdatePreview(context.Context, board.Proposal) error { return nil }

// BenchmarkEngineTurn is one turn of the engine with the model stubbed:
// submit a request, queue it, build the prompt input, store the proposal
// in Redis and Postgres, audit, post the preview. It reports the p50 of
// those turns beside the mean.
func BenchmarkEngineTurn(b *testing.B) {
	rdb := bottest.Redis(b)
	store := storetest.NewStore(b)
	res := planner.Check([]byte(plannertest.NewspaperPlan(b)), plan.Options{Profiles: []string{"Coder", "Planner", "Researcher", "Reviewer"}})
	prefix := bottest.Prefix()
	ps := redisstore.NewInFlight(rdb, prefix)
	eng, err := bot.New(bot.Config{Workers: 1, Profiles: planner.DefaultProfiles(), ReclaimIdle: time.Minute, SweepInterval: time.Hour},
		bottest.Deps(stubPlanner{planner.Outcome{Result: res}}, store, ps, redisstore.NewQueue(rdb, prefix)),
		storetest.Logger(b))
	if err != nil {
		b.Fatal(err)
	}
	measureTurns(b, eng)
}

// measureTurns runs the engine, submits one request per iteration, waits
// for its preview, and reports the p50 turn beside the mean.
func measureTurns(b *testing.B, eng *bot.Engine) {
	posted := make(chan struct{}, 1)
	eng.Register(board.SourceConsole, bot.Registration{Poster: previewPoster{posted}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = eng.Run(ctx) }()
	thread := board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: "bench"}}
	var durations []time.Duration
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		start := time.Now()
		if _, err := eng.Submit(ctx, board.Request{Thread: thread, User: "bench", Text: fmt.Sprint("plan ", i)}); err != nil {
			b.Fatal(err)
		}
		<-posted
		durations = append(durations, time.Since(start))
	}
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	b.ReportMetric(float64(durations[len(durations)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkEngineTurnBaseline is the floor beside EngineTurn: the same
// number of bare Redis round trips a turn makes (about 14), with nothing
// else.
func BenchmarkEngineTurnBaseline(b *testing.B) {
	rdb := bottest.Redis(b)
	ctx := context.Background()
	key := bottest.Prefix()
	for b.Loop() {
		for range 14 {
			if err := rdb.Set(ctx, key, "x", time.Minute).Err(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
