package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/bobnet/bobnet/store"
)

// Stall runs query in a transaction of its own, as a slow or stuck
// session (psql left open) would, and holds what it locked until the
// returned function is called or the test ends.
func Stall(t testing.TB, s *store.Store, query string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, query); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
			t.Error(err)
		}
		conn.Release()
	}
	t.Cleanup(release)
	return release
}

// WaitLockWaiters waits until n sessions of the test's database wait for
// a lock, and fails the test after 10 s. It stops early when done is
// closed (nil: never): a call that should wait for a lock may, wrongly,
// not, and its test then says so itself.
func WaitLockWaiters(t testing.TB, s *store.Store, n int, done <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-done:
			return
		default:
		}
		var waiting int
		if err := s.Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions wait for a lock, want %d", waiting, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
