package systemtest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bobnet/bobnet/store/storetest"
)

// TestAppRidesOutAPostgresFailover serves BobNet on a Postgres primary with
// a synchronous standby through one multi-host DATABASE_URL. The primary
// is stopped while an approval's transaction is between its writes (held
// on a lock), and the standby promoted: the approval answers 200 with one
// board; /readyz says 503 while there is no primary and 200 again within
// 10 s of the promotion; a request after the failover is planned and its
// proposal approved.
func TestAppRidesOutAPostgresFailover(t *testing.T) {
	t.Parallel()
	pair := storetest.NewPair(t)
	a := start(t, withEnv(map[string]string{"DATABASE_URL": pair.URL}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ready := func() int {
		resp, err := http.Get(a.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	before := a.propose(t, "general", "alice")

	// Hold the approval between its writes: its cards wait for a lock a
	// session of ours holds until the primary stops.
	holder, err := pgx.Connect(ctx, pair.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.WithoutCancel(ctx))
	if _, err := holder.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, "LOCK TABLE cards IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		code    int
		boardID string
	}
	approved := make(chan answer, 1)
	go func() {
		code, out := a.approve(t, before, "alice")
		approved <- answer{code, out.BoardID}
	}()
	waitLockWaiter(t, ctx, holder)
	pair.StopPrimary(t)
	if code := ready(); code != http.StatusServiceUnavailable {
		t.Errorf("readyz = %d with no primary, want 503", code)
	}
	select {
	case got := <-approved:
		t.Fatalf("the cut approval answered %+v with no primary; want it to wait for the promotion", got)
	case <-time.After(time.Second):
	}
	pair.Promote(t)
	promoted := time.Now()

	for ready() != http.StatusOK {
		if time.Since(promoted) > 10*time.Second {
			t.Fatal("readyz still fails 10 s after the promotion")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("ready %s after the promotion", time.Since(promoted).Round(time.Millisecond))
	got := <-approved
	t.Logf("the cut approval answered %s after the promotion", time.Since(promoted).Round(time.Millisecond))
	if got.code != http.StatusOK || got.boardID == "" {
		t.Fatalf("the approval cut by the failover: %+v", got)
	}
	if n := a.boards(t, before); n != 1 {
		t.Errorf("%d boards for the approval cut by the failover, want 1", n)
	}

	after := a.propose(t, "general", "alice")
	if code, out := a.approve(t, after, "alice"); code != http.StatusOK || out.BoardID == "" {
		t.Fatalf("approval after the failover: %d %+v", code, out)
	}
	if n := a.boards(t, after); n != 1 {
		t.Errorf("%d boards for the approval after the failover, want 1", n)
	}
}

// waitLockWaiter waits until a session waits for a lock.
func waitLockWaiter(t *testing.T, ctx context.Context, conn *pgx.Conn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the approval does not wait for the lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
