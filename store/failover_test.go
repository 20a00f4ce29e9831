package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// cutLockWaiter waits for a session of the test's database waiting for a
// lock, other than the ones already cut, and ends it, as a failover cuts a
// transaction in flight. It returns the session's pid.
func cutLockWaiter(t *testing.T, s *store.Store, cut ...int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var pid int
		err := s.Pool().QueryRow(context.Background(),
			`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND NOT pid = ANY($1::int[]) LIMIT 1`, append([]int{}, cut...)).Scan(&pid)
		if err == nil {
			if _, err := s.Pool().Exec(context.Background(), `SELECT pg_terminate_backend($1)`, pid); err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no session waits for the lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitLockWaiter waits until a session other than cut waits for a lock.
func waitLockWaiter(t *testing.T, s *store.Store, cut int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := s.Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1`, cut).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the retry does not wait for the lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An approval whose transaction loses its connection before its commit
// (between its writes: the batch is held on a lock, then its session is
// ended) is run once more on a new connection and makes its board once,
// on every path.
func TestExecuteRetriesATransactionCutBeforeCommit(t *testing.T) {
	t.Parallel()
	for _, path := range decisionPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			s := storetest.NewStore(t)
			ctx := context.Background()
			env, before := setUpPath(t, s, path)
			release := storetest.Stall(t, s, path.stall)
			type result struct {
				res board.ExecResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := s.Execute(ctx, board.Execution{ProposalID: "p_x", Channel: "c", ApprovedBy: "alice", Plan: env})
				done <- result{res, err}
			}()
			first := cutLockWaiter(t, s)
			// The retry waits on the same lock, on a session of its own.
			waitLockWaiter(t, s, first)
			release()
			r := <-done
			if r.err != nil || r.res.Replayed {
				t.Fatalf("execute = %+v, %v; want the board made by the retry", r.res, r.err)
			}
			if st := proposalState(t, s, "p_x"); st != "approved" {
				t.Errorf("state %q", st)
			}
			if n := count(t, s, `SELECT count(*) FROM audit_events WHERE proposal_id = 'p_x' AND action = 'executed'`); n != 1 {
				t.Errorf("%d executed events, want 1", n)
			}
			if got := count(t, s, `SELECT count(*) FROM cards`) - before; got != r.res.Cards || got == 0 {
				t.Errorf("%d new cards, want %d", got, r.res.Cards)
			}
		})
	}
}

// The retry is one: an approval cut twice fails, writes nothing and
// leaves the proposal pending, so approving again can succeed.
func TestExecuteRetriesOnlyOnce(t *testing.T) {
	t.Parallel()
	path := decisionPaths[0]
	s := storetest.NewStore(t)
	ctx := context.Background()
	env, before := setUpPath(t, s, path)
	release := storetest.Stall(t, s, path.stall)
	done := make(chan error, 1)
	go func() {
		_, err := s.Execute(ctx, board.Execution{ProposalID: "p_x", Channel: "c", ApprovedBy: "alice", Plan: env})
		done <- err
	}()
	first := cutLockWaiter(t, s)
	cutLockWaiter(t, s, first)
	if err := <-done; err == nil {
		t.Fatal("an approval cut twice succeeded")
	}
	release()
	if n := count(t, s, `SELECT count(*) FROM cards`); n != before {
		t.Errorf("%d cards after a failed approval, want %d", n, before)
	}
	if st := proposalState(t, s, "p_x"); st != "pending" {
		t.Errorf("state %q, want pending", st)
	}
	if _, err := s.Execute(ctx, board.Execution{ProposalID: "p_x", Channel: "c", ApprovedBy: "alice", Plan: env}); err != nil {
		t.Fatalf("approving again: %v", err)
	}
}

// An approval whose commit landed but whose answer was lost with the
// connection is retried, finds its own result and returns it: one board.
func TestExecuteReplaysACommitWhoseAnswerWasLost(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	var cuts atomic.Int32
	store.SetAfterCommit(s, func(conn *pgx.Conn) error {
		if cuts.Add(1) > 1 {
			return nil
		}
		_ = conn.Close(ctx)
		return errors.New("connection lost before the commit's answer")
	})
	res, err := s.Execute(ctx, board.Execution{ProposalID: "p_x", Channel: "c", ApprovedBy: "alice", Plan: newspaper(t)})
	if err != nil || !res.Replayed || res.BoardID == "" {
		t.Fatalf("execute = %+v, %v; want the first commit's board, replayed", res, err)
	}
	if n := count(t, s, `SELECT count(*) FROM boards`); n != 1 {
		t.Errorf("%d boards, want 1", n)
	}
	if cuts.Load() != 2 {
		t.Errorf("%d executions, want 2", cuts.Load())
	}
}

// An execution that fails for what it writes (not a lost connection) is
// not retried.
func TestExecuteDoesNotRetryARefusal(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	var calls atomic.Int32
	store.SetFailBeforeCommit(s, func() error { calls.Add(1); return errors.New("injected") })
	if _, err := s.Execute(context.Background(), board.Execution{ProposalID: "p_x", Channel: "c", Plan: newspaper(t)}); err == nil {
		t.Fatal("no error")
	}
	if calls.Load() != 1 {
		t.Errorf("executed %d times, want 1", calls.Load())
	}
}
