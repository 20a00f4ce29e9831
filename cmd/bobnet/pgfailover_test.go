package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/bobnet/bobnet/store/storetest"
)

// TestAppRidesOutAPostgresFailover serves BobNet on a Postgres primary with
// a synchronous standby through one multi-host DATABASE_URL. An approval
// sent while the primary is stopped and before the standby is promoted
// waits and then answers 200 with one board; /readyz says 503 while there
// is no primary and 200 again within 10 s of the promotion; a request
// after the failover is planned and its proposal approved.
func TestAppRidesOutAPostgresFailover(t *testing.T) {
	t.Parallel()
	pair := storetest.NewPair(t)
	a := startApp(t, map[string]string{"DATABASE_URL": pair.URL})
	ready := func() int {
		resp, err := http.Get(a.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	before := a.propose(t, "general", "alice")

	pair.StopPrimary(t)
	type answer struct {
		code    int
		boardID string
	}
	approved := make(chan answer, 1)
	go func() {
		code, out := a.approve(t, before, "alice")
		approved <- answer{code, out.BoardID}
	}()
	if code := ready(); code != http.StatusServiceUnavailable {
		t.Errorf("readyz = %d with no primary, want 503", code)
	}
	select {
	case got := <-approved:
		t.Fatalf("the approval answered %+v with no primary; want it to wait for the promotion", got)
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
	if got.code != http.StatusOK || got.boardID == "" {
		t.Fatalf("the approval sent during the failover: %+v", got)
	}
	if n := a.boards(t, before); n != 1 {
		t.Errorf("%d boards for the approval made during the failover, want 1", n)
	}

	after := a.propose(t, "general", "alice")
	if code, out := a.approve(t, after, "alice"); code != http.StatusOK || out.BoardID == "" {
		t.Fatalf("approval after the failover: %d %+v", code, out)
	}
	if n := a.boards(t, after); n != 1 {
		t.Errorf("%d boards for the approval after the failover, want 1", n)
	}
}
