package redisstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
)

// readAll reads from q until it has want requests or a few seconds pass,
// acknowledging each.
func readAll(t *testing.T, q *redisstore.Queue, want int) map[board.RequestID]bool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := map[board.RequestID]bool{}
	deadline := time.Now().Add(15 * time.Second)
	for len(seen) < want && time.Now().Before(deadline) {
		got, err := q.Read(ctx, "w", 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range got {
			if seen[d.RequestID] {
				t.Fatalf("%s read twice", d.RequestID)
			}
			seen[d.RequestID] = true
			if err := q.Ack(ctx, d.MessageID); err != nil {
				t.Fatal(err)
			}
		}
	}
	return seen
}

// An upgrade from BobNet's one `requests` stream: what an older replica
// queued there, read or not, is read and answered by the upgraded queue,
// and the emptied stream is deleted.
func TestUpgradeDrainsTheOldStream(t *testing.T) {
	t.Parallel()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	ctx := context.Background()
	old := prefix + ":requests"
	// The older replica's stream, with its group, one entry taken by a
	// worker of its that then died, and two waiting.
	if err := rdb.XGroupCreateMkStream(ctx, old, "engine", "$").Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r_old1", "r_old2", "r_old3"} {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: old, Values: []string{"request", id}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "engine", Consumer: "old-dead", Streams: []string{old, ">"}, Count: 1}).Err(); err != nil {
		t.Fatal(err)
	}
	q := redisstore.NewQueueIn(rdb, bottest.Layout(t, prefix))
	if err := q.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if seen := readAll(t, q, 2); !seen["r_old2"] || !seen["r_old3"] {
		t.Fatalf("read from the old stream: %v; want r_old2 and r_old3", seen)
	}
	time.Sleep(20 * time.Millisecond)
	re, err := q.Reclaim(ctx, "alive", 10*time.Millisecond)
	if err != nil || len(re) != 1 || re[0].RequestID != "r_old1" {
		t.Fatalf("reclaim = %+v, %v; want the old worker's r_old1", re, err)
	}
	if err := q.Ack(ctx, re[0].MessageID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Exists(ctx, old).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the drained old stream was never deleted")
		}
		_, _ = q.Read(ctx, "w", 200*time.Millisecond) // its reader looks again
	}
}

// A proposal an older BobNet stored under untagged keys (`proposal:<id>`,
// `decision:<id>`, …) is read, listed and decided after the upgrade, its
// keys moved to the tagged names with their TTLs. Only a single Redis or
// a sentinel set can hold such keys.
func TestUpgradeReadsOldProposalKeys(t *testing.T) {
	t.Parallel()
	rdb, prefix := bottest.RedisIn(t, redisstore.ModeSingle), bottest.Prefix()
	ctx := context.Background()
	now := time.Now()
	p := board.Proposal{ID: "p_old", State: board.ProposalPending, Version: 1, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"proposal": string(raw), "preview": "m_old"} {
		if err := rdb.Set(ctx, prefix+":"+k+":p_old", v, 2*time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.ZAdd(ctx, prefix+":expiries", redis.Z{Score: float64(p.ExpiresAt.UnixMilli()), Member: "p_old"}).Err(); err != nil {
		t.Fatal(err)
	}
	s := redisstore.NewInFlightIn(rdb, redisstore.Layout{Prefix: prefix})
	pending, err := s.PendingProposals(ctx, now, 10)
	if err != nil || len(pending) != 1 || pending[0].ID != "p_old" || pending[0].Message != "m_old" {
		t.Fatalf("pending after the upgrade = %+v, %v; want p_old with its preview", pending, err)
	}
	got, claimed, err := s.ClaimProposal(ctx, "p_old", "alice", time.Minute)
	if err != nil || !claimed || got.State != board.ProposalPending {
		t.Fatalf("claim = %+v, %v, %v", got, claimed, err)
	}
	if ttl := rdb.PTTL(ctx, prefix+":proposal:{p_old}").Val(); ttl < time.Hour || ttl > 2*time.Hour {
		t.Fatalf("moved proposal's TTL = %s; want its own (under 2h)", ttl)
	}
	if n := rdb.Exists(ctx, prefix+":proposal:p_old", prefix+":preview:p_old").Val(); n != 0 {
		t.Fatalf("%d old keys left", n)
	}
}

// Shards a lowered BOBNET_REDIS_STREAMS no longer writes are still read
// until they are empty: requests queued on four shards are all read by a
// queue of one.
func TestLoweredStreamsAreDrained(t *testing.T) {
	t.Parallel()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	ctx := context.Background()
	mode := bottest.RedisMode(t)
	four := redisstore.Layout{Prefix: prefix, Streams: 4, Mode: mode}
	if err := redisstore.NewQueueIn(rdb, four).Init(ctx); err != nil {
		t.Fatal(err)
	}
	s := redisstore.NewInFlightIn(rdb, four)
	const n = 12
	for i := range n {
		res, err := s.Admit(ctx, board.Admission{Record: board.RequestRecord{Request: board.Request{ID: board.RequestID(fmt.Sprint("r_", i))}},
			UserKey: "u", ChannelKey: fmt.Sprint("channel:console:c", i)})
		if err != nil || res.Outcome != board.AdmitNew {
			t.Fatalf("admit %d = %+v, %v", i, res, err)
		}
	}
	shards := 0
	for k := range 4 {
		if rdb.XLen(ctx, fmt.Sprintf("%s:requests:{%d}", prefix, k)).Val() > 0 {
			shards++
		}
	}
	if shards < 2 {
		t.Fatalf("twelve channels went to %d of 4 shards; want them spread", shards)
	}
	one := redisstore.NewQueueIn(rdb, redisstore.Layout{Prefix: prefix, Streams: 1, Mode: mode})
	if err := one.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if seen := readAll(t, one, n); len(seen) != n {
		t.Fatalf("a queue of one shard read %d of %d", len(seen), n)
	}
}
