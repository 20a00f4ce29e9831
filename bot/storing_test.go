package bot_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
)

// Plans whose models answered together are stored a few at a time: with
// every slot taken, an answered plan waits (its model was asked and
// answered, nothing is stored), and is stored and previewed as soon as a
// slot is free.
func TestAnsweredPlansWaitForAStoringSlot(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	answerNewspaper(t, env)
	release := env.Engine.HoldStoring(bot.StoringAtOnce())
	id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	askedButNotStored(t, env, 5*time.Second, "while every storing slot was taken")
	if st, err := env.Engine.Request(context.Background(), id); err != nil || st.State != board.RequestPlanning {
		t.Fatalf("request while waiting for a slot: %+v, %v; want planning", st, err)
	}
	release()
	if st := env.WaitRequest(t, id); st.State != board.RequestDone || st.ProposalID == "" {
		t.Fatalf("status once a slot is free = %+v", st)
	}
	if n := count(t, env, "proposals"); n != 1 {
		t.Fatalf("proposals = %d, want 1", n)
	}
}

// heldRequested is an audit log that holds each request's "requested"
// row until release is closed, as a Postgres slow to commit does.
type heldRequested struct {
	bot.AuditLog
	release chan struct{}
	mu      sync.Mutex
	order   []string
}

func (a *heldRequested) RecordAudit(ctx context.Context, e board.AuditEvent) error {
	if e.Action == "requested" {
		select {
		case <-a.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err := a.AuditLog.RecordAudit(ctx, e)
	a.mu.Lock()
	a.order = append(a.order, e.Action)
	a.mu.Unlock()
	return err
}

// The model is asked as soon as what it is shown is read, while the
// request's taking is still being written; nothing the answer records
// goes before it: the audit reads requested, then proposed.
func TestModelIsAskedWhileTheTakingIsWritten(t *testing.T) {
	t.Parallel()
	held := &heldRequested{release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(held.release) }) }
	env := bottest.New(t, bottest.WithDeps(func(d *bot.Deps) { held.AuditLog = d.Audit; d.Audit = held }))
	t.Cleanup(release)
	answerNewspaper(t, env)
	id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	// Within the audit write's own timeout (5 s).
	askedButNotStored(t, env, 3*time.Second, "while the request's audit row was being written")
	release()
	if st := env.WaitRequest(t, id); st.State != board.RequestDone || st.ProposalID == "" {
		t.Fatalf("status = %+v", st)
	}
	held.mu.Lock()
	defer held.mu.Unlock()
	if len(held.order) < 2 || held.order[0] != "requested" || held.order[1] != "proposed" {
		t.Errorf("audit order = %v, want requested then proposed", held.order)
	}
}

// askedButNotStored fails unless env's model is asked within d and, a
// moment later, no proposal is stored (while says when, for the message).
func askedButNotStored(t *testing.T, env *bottest.Env, d time.Duration, while string) {
	t.Helper()
	for deadline := time.Now().Add(d); len(env.Model.Requests()) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if len(env.Model.Requests()) == 0 {
		t.Fatal("the model was not asked " + while)
	}
	time.Sleep(300 * time.Millisecond)
	if n := count(t, env, "proposals"); n != 0 {
		t.Fatalf("%d proposals stored %s", n, while)
	}
}
