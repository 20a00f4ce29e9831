package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
)

func TestDepthCountsWaitingAndInFlightRequests(t *testing.T) {
	t.Parallel()
	rdb := bottest.Redis(t)
	prefix := bottest.Prefix()
	q := redisstore.NewQueueIn(rdb, bottest.Layout(t, prefix))
	ctx := context.Background()
	depth := func(wantWaiting, wantInFlight int64) {
		t.Helper()
		w, f, err := q.Depth(ctx)
		if err != nil || w != wantWaiting || f != wantInFlight {
			t.Fatalf("Depth = %d waiting, %d in flight, %v; want %d, %d", w, f, err, wantWaiting, wantInFlight)
		}
	}
	depth(0, 0) // no stream yet
	for _, id := range []string{"r_1", "r_2", "r_3"} {
		admit(t, rdb, prefix, board.RequestID(id))
	}
	depth(3, 0) // no group yet: everything waits
	if err := q.Init(ctx); err != nil {
		t.Fatal(err)
	}
	depth(3, 0)
	got, err := q.Read(ctx, "w1", 100*time.Millisecond)
	if err != nil || len(got) != 1 {
		t.Fatalf("read = %+v, %v", got, err)
	}
	depth(2, 1)
	if err := q.Ack(ctx, got[0].MessageID); err != nil {
		t.Fatal(err)
	}
	depth(2, 0)
	// Deleting an entry makes Redis unsure of the lag; Depth counts.
	id, shard, _ := strings.Cut(got[0].MessageID, "@")
	if err := rdb.XDel(ctx, prefix+":requests:{"+shard+"}", id).Err(); err != nil {
		t.Fatal(err)
	}
	depth(2, 0)
}
