package pending_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/pending"
)

// admit queues request id through the store's one-round-trip intake.
func admit(t *testing.T, rdb *redis.Client, prefix string, id bot.RequestID) {
	t.Helper()
	res, err := pending.NewStore(rdb, prefix).Admit(context.Background(), bot.Admission{
		Record: bot.RequestRecord{Request: bot.Request{ID: id}}, UserKey: "u", ChannelKey: "c",
	})
	if err != nil || res.Outcome != bot.AdmitNew {
		t.Fatalf("admit = %+v, %v", res, err)
	}
}

func TestUnackedEntryIsReclaimedByAnotherConsumer(t *testing.T) {
	t.Parallel()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	q := pending.NewQueue(rdb, prefix)
	ctx := context.Background()
	if err := q.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.Init(ctx); err != nil { // a second replica starting
		t.Fatalf("second Init: %v", err)
	}
	admit(t, rdb, prefix, "r_1")
	got, err := q.Read(ctx, "dead", 100*time.Millisecond)
	if err != nil || len(got) != 1 || got[0].RequestID != "r_1" {
		t.Fatalf("read = %+v, %v", got, err)
	}
	// The reader dies without acking. Before the idle time nothing moves.
	if re, err := q.Reclaim(ctx, "alive", time.Hour); err != nil || len(re) != 0 {
		t.Fatalf("early reclaim = %+v, %v; want none", re, err)
	}
	time.Sleep(60 * time.Millisecond)
	re, err := q.Reclaim(ctx, "alive", 50*time.Millisecond)
	if err != nil || len(re) != 1 || re[0].RequestID != "r_1" {
		t.Fatalf("reclaim = %+v, %v; want r_1", re, err)
	}
	if err := q.Ack(ctx, re[0].MessageID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	if re, err := q.Reclaim(ctx, "other", 50*time.Millisecond); err != nil || len(re) != 0 {
		t.Fatalf("reclaim after ack = %+v, %v; want none", re, err)
	}
}

// An acknowledged request leaves the stream: only requests waiting or in
// flight stay in it, whatever the depth says.
func TestAckDeletesTheEntry(t *testing.T) {
	t.Parallel()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	q := pending.NewQueue(rdb, prefix)
	ctx := context.Background()
	if err := q.Init(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []bot.RequestID{"r_1", "r_2", "r_3"} {
		admit(t, rdb, prefix, id)
	}
	got, err := q.Read(ctx, "w", 100*time.Millisecond)
	if err != nil || len(got) != 1 || got[0].RequestID != "r_1" {
		t.Fatalf("read = %+v, %v", got, err)
	}
	if err := q.Ack(ctx, got[0].MessageID); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.XLen(ctx, prefix+":requests").Result(); err != nil || n != 2 {
		t.Fatalf("stream length after one ack = %d, %v; want 2", n, err)
	}
	waiting, inFlight, err := q.Depth(ctx)
	if err != nil || waiting != 2 || inFlight != 0 {
		t.Fatalf("depth = %d waiting, %d in flight, %v; want 2, 0", waiting, inFlight, err)
	}
	if err := q.Ack(ctx, got[0].MessageID); err != nil { // a second ack, after a lost reply
		t.Fatalf("second ack: %v", err)
	}
	got, err = q.Read(ctx, "w", 100*time.Millisecond)
	if err != nil || len(got) != 1 || got[0].RequestID != "r_2" {
		t.Fatalf("next read = %+v, %v; want r_2", got, err)
	}
}

// A worker that keeps renewing its lease keeps its request however long
// it works; once it stops, the request is reclaimed.
func TestRenewedEntryIsNotReclaimed(t *testing.T) {
	t.Parallel()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	q := pending.NewQueue(rdb, prefix)
	ctx := context.Background()
	if err := q.Init(ctx); err != nil {
		t.Fatal(err)
	}
	admit(t, rdb, prefix, "r_slow")
	got, err := q.Read(ctx, "slow", 100*time.Millisecond)
	if err != nil || len(got) != 1 {
		t.Fatalf("read = %+v, %v", got, err)
	}
	const idle = 150 * time.Millisecond
	for range 6 { // 6 x 50 ms: twice the idle time, renewed all along
		time.Sleep(idle / 3)
		if err := q.Renew(ctx, "slow", []string{got[0].MessageID}); err != nil {
			t.Fatal(err)
		}
		if re, err := q.Reclaim(ctx, "thief", idle); err != nil || len(re) != 0 {
			t.Fatalf("reclaimed a renewed entry: %+v, %v", re, err)
		}
	}
	time.Sleep(idle + 20*time.Millisecond)
	if re, err := q.Reclaim(ctx, "thief", idle); err != nil || len(re) != 1 {
		t.Fatalf("after renewals stop, reclaim = %+v, %v; want the entry", re, err)
	}
}
