package bot_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// flakyBoards is the real board store whose first Execute fails, as when
// Postgres drops the connection mid-approve.
type flakyBoards struct {
	*store.Store
	failures atomic.Int32
}

var errConnectionLost = errors.New("connection lost")

func (f *flakyBoards) Execute(ctx context.Context, x board.Execution) (board.ExecResult, error) {
	if f.failures.Add(-1) >= 0 {
		return board.ExecResult{}, errConnectionLost
	}
	return f.Store.Execute(ctx, x)
}

func TestFailedExecutionGivesTheClaimBack(t *testing.T) {
	t.Parallel()
	rdb := bottest.Redis(t)
	store := storetest.NewStore(t)
	boards := &flakyBoards{Store: store}
	boards.failures.Store(1)
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{Profiles: planner.ProfileNames(planner.DefaultProfiles())})
	if !res.Valid {
		t.Fatalf("newspaper plan invalid: %+v", res.Errors)
	}
	prefix := bottest.Prefix()
	ps := redisstore.NewInFlight(rdb, prefix)
	deps := bottest.Deps(stubPlanner{planner.Outcome{Result: res}}, store, ps, redisstore.NewQueue(rdb, prefix))
	deps.Decisions = boards
	eng, err := bot.New(bot.Config{Workers: 1, Profiles: planner.DefaultProfiles(), ProposalTTL: time.Hour, ReclaimIdle: time.Minute, SweepInterval: time.Hour},
		deps, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	poster := &bottest.Poster{}
	eng.Register(board.SourceConsole, bot.Registration{Poster: poster})
	ctx, env, st := runAndPropose(t, eng, store)

	if _, err := eng.Approve(ctx, st.ProposalID, "alice"); !errors.Is(err, bot.ErrUnavailable) || !errors.Is(err, errConnectionLost) {
		t.Fatalf("first approve: err = %v, want ErrUnavailable wrapping the cause", err)
	}
	if n := count(t, env, "boards"); n != 0 {
		t.Fatalf("boards after failed approve = %d, want 0", n)
	}
	p, err := eng.Proposal(ctx, st.ProposalID)
	if err != nil || p.State != board.ProposalPending {
		t.Fatalf("after failed approve: state %q err %v, want pending", p.State, err)
	}

	a, err := eng.Approve(ctx, st.ProposalID, "alice")
	if err != nil {
		t.Fatalf("retry approve: %v", err)
	}
	if a.BoardID == "" {
		t.Fatal("retry approve: no board")
	}
	if n := count(t, env, "boards"); n != 1 {
		t.Fatalf("boards = %d, want 1", n)
	}
	if _, err := eng.Approve(ctx, st.ProposalID, "alice"); !errors.Is(err, bot.ErrAlreadyDecided) {
		t.Fatalf("third approve: err = %v, want ErrAlreadyDecided", err)
	}
}

// runAndPropose runs eng's workers for the rest of the test and has alice
// ask for the newspaper in general; it returns the request's status with
// its proposal.
func runAndPropose(t *testing.T, eng *bot.Engine, store *store.Store) (context.Context, *bottest.Env, board.RequestStatus) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	env := &bottest.Env{Engine: eng, Store: store}
	id, err := eng.Submit(ctx, board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitRequest(t, id)
	if st.ProposalID == "" {
		t.Fatalf("no proposal: %+v", st)
	}
	return ctx, env, st
}
