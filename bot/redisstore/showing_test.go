package redisstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
)

// Of many replicas claiming a request's message at once, one wins; the
// showing keeps every field set, per request, and lives its TTL.
func TestShowingClaimOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	s := redisstore.NewInFlight(rdb, prefix)
	id := board.RequestID("r_showing")
	if err := s.ShowingSet(ctx, id, map[string]string{"user": "U1", "team": "T1"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	var wins atomic.Int32
	var mu sync.Mutex
	var seen []map[string]string // the showing each claim was answered with
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won, sh, err := s.ShowingClaim(ctx, id, "msg", []string{"stream", "placeholder"}[i%2], nil, time.Minute)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			seen = append(seen, sh)
			mu.Unlock()
			if won {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Fatalf("%d claims won, want 1", n)
	}
	got, err := s.Showing(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got["user"] != "U1" || got["team"] != "T1" || (got["msg"] != "stream" && got["msg"] != "placeholder") {
		t.Fatalf("showing = %v", got)
	}
	// Every claim, won or lost, is answered with the showing as it left
	// it: the winner's message and the fields set before.
	for _, sh := range seen {
		if sh["msg"] != got["msg"] || sh["user"] != "U1" {
			t.Fatalf("a claim answered with %v; the showing is %v", sh, got)
		}
	}
	if other, _ := s.Showing(ctx, "r_other"); len(other) != 0 {
		t.Fatalf("another request's showing = %v", other)
	}
	ttl, err := rdb.TTL(ctx, prefix+":showing:{r:r_showing}").Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("ttl = %s, %v", ttl, err)
	}
}

// Of many requests holding one thread's stream at once, one holds it;
// holding it again is its own, other threads are apart, and a release by
// anyone but its holder leaves it.
func TestStreamHoldIsOneRequestsAtATime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redisstore.NewInFlight(bottest.Redis(t), bottest.Prefix())
	th := board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: "T1/C1"}, ID: "1700000000.000100"}
	var wins atomic.Int32
	var winner atomic.Value
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := board.RequestID("r_" + string(rune('a'+i)))
			won, err := s.HoldStream(ctx, th, id, time.Minute)
			if err != nil {
				t.Error(err)
			}
			if won {
				wins.Add(1)
				winner.Store(id)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d requests hold the thread's stream; want 1", wins.Load())
	}
	holder := winner.Load().(board.RequestID)
	hold := func(th board.Thread, id board.RequestID) bool {
		t.Helper()
		won, err := s.HoldStream(ctx, th, id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return won
	}
	if !hold(th, holder) {
		t.Errorf("%s holds the stream, yet holding it again failed", holder)
	}
	other := th
	other.ID = "1700000000.000200"
	if !hold(other, "r_z") {
		t.Error("another thread's stream is held by the first thread's request")
	}
	if err := s.ReleaseStream(ctx, th, "r_z"); err != nil {
		t.Fatal(err)
	}
	if hold(th, "r_y") {
		t.Error("a release by a request that did not hold the stream let it go")
	}
	if err := s.ReleaseStream(ctx, th, holder); err != nil {
		t.Fatal(err)
	}
	if !hold(th, "r_y") {
		t.Error("the stream, released by its holder, is still held")
	}
}
