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
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won, err := s.ShowingClaim(ctx, id, "msg", []string{"stream", "placeholder"}[i%2], nil, time.Minute)
			if err != nil {
				t.Error(err)
			}
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
	if other, _ := s.Showing(ctx, "r_other"); len(other) != 0 {
		t.Fatalf("another request's showing = %v", other)
	}
	ttl, err := rdb.TTL(ctx, prefix+":showing:{r:r_showing}").Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("ttl = %s, %v", ttl, err)
	}
}
