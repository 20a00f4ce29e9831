package outbox_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/adapters/webhook/outbox"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// crashAfterCommit is a board store whose Execute commits and then fails
// as a process dying (or a connection lost) just after COMMIT would: the
// approval is in Postgres, and the engine hears only an error.
type crashAfterCommit struct {
	*store.Store
	crash atomic.Bool
}

func (c *crashAfterCommit) Execute(ctx context.Context, ex board.Execution) (board.ExecResult, error) {
	res, err := c.Store.Execute(ctx, ex)
	if err == nil && c.crash.Load() {
		return board.ExecResult{}, errors.New("connection lost after COMMIT")
	}
	return res, err
}

// engineWith starts an engine on store, deciding through decisions, whose
// events go to o.
func engineWith(t *testing.T, store *store.Store, decisions bot.Decisions, o *outbox.Outbox) *bot.Engine {
	t.Helper()
	rdb := bottest.Redis(t)
	prefix := bottest.Prefix()
	model := plannertest.NewServer(t)
	plan := plannertest.NewspaperPlan(t)
	model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: plan} })
	client := planner.NewClient(planner.ClientConfig{BaseURL: model.URL(), Model: "test-model", Backoff: time.Millisecond, Timeout: 20 * time.Second}, storetest.Logger(t))
	deps := bottest.Deps(client, store, redisstore.NewInFlight(rdb, prefix), redisstore.NewQueue(rdb, prefix))
	deps.Decisions = decisions
	deps.Events = bot.Events{Sink: o, Encoder: o}
	eng, err := bot.New(bot.Config{
		ProposalTTL: time.Hour, PublicURL: "http://bobnet.test", Workers: 1, Profiles: planner.DefaultProfiles(),
		ReclaimIdle: time.Second, SweepInterval: 50 * time.Millisecond, ConsumerName: "test-" + prefix,
	}, deps, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	eng.Register(board.SourceConsole, bot.Registration{Poster: &bottest.Poster{}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return eng
}

// proposeIn asks eng for the newspaper board in console:news and returns
// the pending proposal.
func proposeIn(t *testing.T, eng *bot.Engine) board.Proposal {
	t.Helper()
	ctx := context.Background()
	id, err := eng.Submit(ctx, board.Request{Thread: board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: "news"}, ID: "t1"},
		User: "alice", Text: "Plan a daily research newspaper"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := eng.Request(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == board.RequestDone && st.ProposalID != "" {
			p, err := eng.Proposal(ctx, st.ProposalID)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		if st.State == board.RequestFailed || time.Now().After(deadline) {
			t.Fatalf("request = %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestApprovalEventsSurviveACrashAfterCommit: the approval's events are
// written in its own transaction, so a process that dies right after
// COMMIT (before it could hand them to the outbox) still has them
// delivered; approving again afterwards finds the approval and sends no
// second copy.
func TestApprovalEventsSurviveACrashAfterCommit(t *testing.T) {
	t.Parallel()
	store := storetest.NewStore(t)
	rc := newReceiver(t)
	o := outbox.New(config(rc.srv.URL), store, storetest.Logger(t))
	run(t, o)
	boards := &crashAfterCommit{Store: store}
	eng := engineWith(t, store, boards, o)
	p := proposeIn(t, eng)
	rc.waitFor(t, "proposal.created", func(got []received, _ []string) bool { return len(got) >= 1 })

	boards.crash.Store(true)
	if _, err := eng.Approve(context.Background(), p.ID, "alice"); err == nil {
		t.Fatal("the approval that lost its connection after COMMIT succeeded")
	}
	rc.waitFor(t, "proposal.approved and board.created", func(got []received, _ []string) bool { return len(got) >= 3 })

	boards.crash.Store(false)
	a, err := eng.Approve(context.Background(), p.ID, "alice")
	if err != nil {
		t.Fatalf("approving again: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := o.Status(context.Background())
		if err == nil && st.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status = %+v, %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, _ := rc.snapshot()
	if len(got) != 3 || got[1].Payload.Type != bot.EventProposalApproved || got[2].Payload.Type != bot.EventBoardCreated {
		t.Fatalf("got %+v", got)
	}
	if d := got[2].Payload.Data; d.BoardID != string(a.BoardID) || d.BoardURL != a.BoardURL || d.Actor != "alice" || d.State != board.ProposalApproved {
		t.Fatalf("board.created = %+v, approval %+v", d, a)
	}
}

// TestShutdownDoesNotCountAnAbortedPost: stopping the sender while a
// receiver is still answering aborts the POST, and the row is given back
// as it was: no attempt counted, no error, due at once for the next
// sender rather than claimed for the lease.
func TestShutdownDoesNotCountAnAbortedPost(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the server notices a closed connection only after the body
		arrived <- struct{}{}
		select { // answers only when the sender gives up
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(srv.Close)
	cfg := config(srv.URL)
	cfg.Lease = time.Hour
	o := outbox.New(cfg, store.New(pool, storetest.Logger(t)), storetest.Logger(t))
	stop := run(t, o)
	if err := o.Emit(context.Background(), event(bot.EventProposalCreated, "p_1")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the POST never arrived")
	}
	stop()
	var attempts int
	var lastErr string
	var due bool
	if err := pool.QueryRow(context.Background(), `SELECT attempts, last_error, next_attempt_at <= now() FROM event_outbox`).Scan(&attempts, &lastErr, &due); err != nil {
		t.Fatal(err)
	}
	if attempts != 0 || lastErr != "" || !due {
		t.Fatalf("after the shutdown: attempts %d, last_error %q, due now %v; want 0, \"\", true", attempts, lastErr, due)
	}
}

// TestADeadSendersClaimExpires: a sender that claimed a row and died
// (here: its pool is gone before it can record the answer) holds the row
// for its lease only; then another sender sends it, with the same
// webhook-id.
func TestADeadSendersClaimExpires(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	var dead *pgxpool.Pool
	var mu sync.Mutex
	var ids []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if len(ids) == 0 {
			dead.Close() // the first sender dies while its POST is answered
		}
		ids = append(ids, r.Header.Get("webhook-id"))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	cfg := config(srv.URL)
	cfg.Timeout, cfg.Lease = 500*time.Millisecond, time.Second
	var err error
	if dead, err = pgxpool.New(ctx, pool.Config().ConnString()); err != nil {
		t.Fatal(err)
	}
	first := outbox.New(cfg, store.New(dead, storetest.Logger(t)), storetest.Logger(t))
	if err := first.Emit(ctx, event(bot.EventProposalCreated, "p_1")); err != nil {
		t.Fatal(err)
	}
	claimed := time.Now()
	if n, _ := first.SendDue(ctx); n != 1 {
		t.Fatalf("the first sender claimed %d rows", n)
	}
	second := outbox.New(cfg, store.New(pool, storetest.Logger(t)), storetest.Logger(t))
	if n, err := second.SendDue(ctx); n != 0 || err != nil {
		t.Fatalf("the second sender took a claimed row at once: %d, %v", n, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := second.SendDue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead sender's claim never expired")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if waited := time.Since(claimed); waited < cfg.Lease {
		t.Fatalf("taken again after %s, before the %s lease", waited, cfg.Lease)
	}
	mu.Lock()
	defer mu.Unlock()
	if st, _ := second.Status(ctx); st != (outbox.Status{Delivered: 1}) || len(ids) != 2 || ids[0] != ids[1] {
		t.Fatalf("status %+v, webhook-ids %v", st, ids)
	}
}
