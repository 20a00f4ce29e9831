package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
)

// admit queues request id through the store's one-round-trip intake.
func admit(t *testing.T, rdb redis.UniversalClient, prefix string, id board.RequestID) {
	t.Helper()
	res, err := redisstore.NewInFlightIn(rdb, bottest.Layout(t, prefix)).Admit(context.Background(), board.Admission{
		Record: board.RequestRecord{Request: board.Request{ID: id}}, UserKey: "u", ChannelKey: "c",
	})
	if err != nil || res.Outcome != board.AdmitNew {
		t.Fatalf("admit = %+v, %v", res, err)
	}
}

// newStore returns a store on rdb under prefix, laid out for the tests'
// Redis mode.
func newStore(t *testing.T, rdb redis.UniversalClient, prefix string) *redisstore.InFlight {
	t.Helper()
	return redisstore.NewInFlightIn(rdb, bottest.Layout(t, prefix))
}

// newQueue returns a fresh request stream with its consumer group.
func newQueue(t *testing.T) (redis.UniversalClient, string, *redisstore.Queue) {
	t.Helper()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	q := redisstore.NewQueueIn(rdb, bottest.Layout(t, prefix))
	if err := q.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rdb, prefix, q
}

// readOne reads the next request for consumer and requires it to be want.
func readOne(t *testing.T, q *redisstore.Queue, consumer string, want board.RequestID) board.QueuedRequest {
	t.Helper()
	got, err := q.Read(context.Background(), consumer, 100*time.Millisecond)
	if err != nil || len(got) != 1 || got[0].RequestID != want {
		t.Fatalf("read = %+v, %v; want %s", got, err, want)
	}
	return got[0]
}

func TestUnackedEntryIsReclaimedByAnotherConsumer(t *testing.T) {
	t.Parallel()
	rdb, prefix, q := newQueue(t)
	ctx := context.Background()
	if err := q.Init(ctx); err != nil { // a second replica starting
		t.Fatalf("second Init: %v", err)
	}
	admit(t, rdb, prefix, "r_1")
	readOne(t, q, "dead", "r_1")
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
	rdb, prefix, q := newQueue(t)
	ctx := context.Background()
	for _, id := range []board.RequestID{"r_1", "r_2", "r_3"} {
		admit(t, rdb, prefix, id)
	}
	first := readOne(t, q, "w", "r_1")
	if err := q.Ack(ctx, first.MessageID); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Len(ctx); err != nil || n != 2 {
		t.Fatalf("stream length after one ack = %d, %v; want 2", n, err)
	}
	waiting, inFlight, err := q.Depth(ctx)
	if err != nil || waiting != 2 || inFlight != 0 {
		t.Fatalf("depth = %d waiting, %d in flight, %v; want 2, 0", waiting, inFlight, err)
	}
	if err := q.Ack(ctx, first.MessageID); err != nil { // a second ack, after a lost reply
		t.Fatalf("second ack: %v", err)
	}
	readOne(t, q, "w", "r_2")
}

// A worker that keeps renewing its lease keeps its request however long
// it works; once it stops, the request is reclaimed.
func TestRenewedEntryIsNotReclaimed(t *testing.T) {
	t.Parallel()
	rdb, prefix, q := newQueue(t)
	ctx := context.Background()
	admit(t, rdb, prefix, "r_slow")
	got := readOne(t, q, "slow", "r_slow")
	// A renewal every quarter of the idle time leaves three quarters of
	// it for a sleep that overruns on a loaded machine.
	const idle = time.Second
	for range 8 { // twice the idle time, renewed all along
		time.Sleep(idle / 4)
		if err := q.Renew(ctx, "slow", []string{got.MessageID}); err != nil {
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

// A reclaim takes one entry at a time, the one a worker can lease, and
// says how many times the entry was handed out, renewals not counted: the
// engine gives up on a request handed out too often.
func TestReclaimTakesOneAndCountsDeliveries(t *testing.T) {
	t.Parallel()
	rdb, prefix, q := newQueue(t)
	ctx := context.Background()
	admit(t, rdb, prefix, "r_1")
	admit(t, rdb, prefix, "r_2")
	if d := readOne(t, q, "dead", "r_1"); d.Count != 1 {
		t.Fatalf("first read count = %d, want 1", d.Count)
	}
	d2 := readOne(t, q, "dead", "r_2")
	if err := q.Renew(ctx, "dead", []string{d2.MessageID}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	re, err := q.Reclaim(ctx, "alive", 50*time.Millisecond)
	if err != nil || len(re) != 1 || re[0].RequestID != "r_1" || re[0].Count != 2 {
		t.Fatalf("reclaim = %+v, %v; want r_1 alone, handed out twice", re, err)
	}
	if err := q.Ack(ctx, re[0].MessageID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	re, err = q.Reclaim(ctx, "alive", 50*time.Millisecond)
	if err != nil || len(re) != 1 || re[0].RequestID != "r_2" || re[0].Count != 2 {
		t.Fatalf("second reclaim = %+v, %v; want r_2, handed out twice (its renewal not counted)", re, err)
	}
}

// A shard's reader blocked in XREADGROUP outlives its engine's context by
// up to a second; an entry it reads then is left to the other replicas at
// once (marked idle), not after the reclaim time.
func TestEntryReadAsReadersStopIsLeftForOthersAtOnce(t *testing.T) {
	t.Parallel()
	rdb, prefix, q := newQueue(t)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = q.Read(ctx, "w", 5*time.Second) // a worker waits: the reader blocks
	}()
	time.Sleep(100 * time.Millisecond)
	stop() // the engine stops; the reader's read still blocks
	<-done
	admit(t, rdb, prefix, "r_late")
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		re, err := q.Reclaim(context.Background(), "other", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(re) == 1 && re[0].RequestID == "r_late" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the entry read as the readers stopped was not left for a reclaim")
}

// Every entry a reader hands over reaches the worker, however soon: a
// hand-over within the entry's first millisecond in its group is not
// mistaken for one another replica reclaimed meanwhile.
func TestEveryHandedOverEntryIsTaken(t *testing.T) {
	t.Parallel()
	rdb, prefix, q := newQueue(t)
	ctx := context.Background()
	for i := range 200 {
		id := board.RequestID(fmt.Sprint("r_", i))
		admit(t, rdb, prefix, id)
		got, err := q.Read(ctx, "w", 2*time.Second)
		if err != nil || len(got) != 1 || got[0].RequestID != id {
			t.Fatalf("read %d = %+v, %v; want %s", i, got, err, id)
		}
		if err := q.Ack(ctx, got[0].MessageID); err != nil {
			t.Fatal(err)
		}
	}
}

// A burst of requests with as many workers waiting reaches every worker,
// each request once: the reader reads them in batches and hands each
// over to one worker.
func TestBurstReachesEveryWaitingWorker(t *testing.T) {
	t.Parallel()
	rdb, prefix, q := newQueue(t)
	ctx := context.Background()
	const n = 20
	got := make(chan board.RequestID, 2*n)
	ready := make(chan struct{}, n)
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			ready <- struct{}{}
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				qs, err := q.Read(ctx, fmt.Sprint("w", w), time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				for _, d := range qs {
					got <- d.RequestID
					if err := q.Ack(ctx, d.MessageID); err != nil {
						t.Error(err)
					}
				}
				if len(qs) > 0 {
					return
				}
			}
		})
	}
	for range n {
		<-ready
	}
	time.Sleep(100 * time.Millisecond) // the workers wait in Read
	for i := range n {
		admit(t, rdb, prefix, board.RequestID(fmt.Sprint("r_", i)))
	}
	wg.Wait()
	close(got)
	seen := map[board.RequestID]int{}
	for id := range got {
		seen[id]++
	}
	for i := range n {
		if id := board.RequestID(fmt.Sprint("r_", i)); seen[id] != 1 {
			t.Errorf("%s taken %d times, want once", id, seen[id])
		}
	}
}

// A worker takes an entry and its request's record in one round trip; a
// request whose record is gone comes without one, for the worker to find
// missing.
func TestTakenEntryComesWithItsRecord(t *testing.T) {
	t.Parallel()
	rdb, prefix, q := newQueue(t)
	ctx := context.Background()
	s := newStore(t, rdb, prefix)
	res, err := s.Admit(ctx, board.Admission{
		Record:  board.RequestRecord{Request: board.Request{ID: "r_1", Text: "plan the newspaper", User: "alice"}, Status: board.RequestStatus{ID: "r_1", State: board.RequestQueued}},
		UserKey: "u", ChannelKey: "c",
	})
	if err != nil || res.Outcome != board.AdmitNew {
		t.Fatalf("admit = %+v, %v", res, err)
	}
	d := readOne(t, q, "w", "r_1")
	if d.Record == nil || d.Record.Request.Text != "plan the newspaper" || d.Record.Status.State != board.RequestQueued {
		t.Fatalf("taken with record %+v, want r_1's as admitted", d.Record)
	}

	admit(t, rdb, prefix, "r_2")
	if err := rdb.Del(ctx, prefix+":request:r_2").Err(); err != nil {
		t.Fatal(err)
	}
	if d := readOne(t, q, "w", "r_2"); d.Record != nil {
		t.Fatalf("taken with record %+v, want none: it was deleted", d.Record)
	}
}
