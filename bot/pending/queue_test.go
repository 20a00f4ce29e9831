package pending_test

import (
	"context"
	"testing"
	"time"

	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/pending"
)

func TestUnackedEntryIsReclaimedByAnotherConsumer(t *testing.T) {
	t.Parallel()
	q := pending.NewQueue(bottest.Redis(t), bottest.Prefix())
	ctx := context.Background()
	if err := q.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.Init(ctx); err != nil { // a second replica starting
		t.Fatalf("second Init: %v", err)
	}
	if err := q.Enqueue(ctx, "r_1"); err != nil {
		t.Fatal(err)
	}
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
