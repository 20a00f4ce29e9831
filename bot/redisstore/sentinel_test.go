package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
)

// sentinelSet is the sentinel set scripts/rediscluster.sh started: its
// folder (each server's <port>.pid and <port>.conf) and a sentinel to ask.
type sentinelSet struct {
	dir      string
	sentinel *redis.SentinelClient
}

func newSentinelSet(t *testing.T) sentinelSet {
	t.Helper()
	raw, dir := os.Getenv("REDIS_SENTINEL_URL"), os.Getenv("REDIS_SENTINEL_DIR")
	if raw == "" || dir == "" {
		t.Skip("REDIS_SENTINEL_URL and REDIS_SENTINEL_DIR are not set; scripts/test.sh starts a sentinel set (scripts/rediscluster.sh)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	s := redis.NewSentinelClient(&redis.Options{Addr: u.Host})
	t.Cleanup(func() { _ = s.Close() })
	return sentinelSet{dir: dir, sentinel: s}
}

// master is the port of the master the sentinels name.
func (s sentinelSet) master(t *testing.T) string {
	t.Helper()
	addr, err := s.sentinel.GetMasterAddrByName(context.Background(), "bobnet").Result()
	if err != nil {
		t.Fatal(err)
	}
	return addr[1]
}

// signal sends sig to the server on port.
func (s sentinelSet) signal(t *testing.T, port string, sig syscall.Signal) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(s.dir, port+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
}

// replica is the port of the master's replica.
func (s sentinelSet) replica(t *testing.T) string {
	t.Helper()
	reps, err := s.sentinel.Replicas(context.Background(), "bobnet").Result()
	if err != nil || len(reps) == 0 {
		t.Fatalf("replicas: %v, %v", reps, err)
	}
	return reps[0]["port"]
}

// sentinelAdmission is a request of channel c with a dedupe key.
func sentinelAdmission(id string) board.Admission {
	return board.Admission{
		Record:    board.RequestRecord{Request: board.Request{ID: board.RequestID(id), User: "alice", Text: "plan"}},
		DedupeKey: "console:c:" + id, DedupeTTL: time.Hour,
		UserKey: "user:console:alice", ChannelKey: "channel:console:c",
	}
}

// A request acknowledged in sentinel mode survives its master: the master
// is killed (SIGKILL) right after the acknowledgements, the sentinels
// promote the replica, and every acknowledged request is on the stream,
// with its record, and is read from the new master. The killed server is
// started again and rejoins as a replica; a retry is a duplicate once it
// has.
func TestSentinelFailoverKeepsAcknowledgedRequests(t *testing.T) {
	set := newSentinelSet(t)
	rdb := bottest.RedisIn(t, redisstore.ModeSentinel)
	l := redisstore.Layout{Prefix: bottest.Prefix(), Mode: redisstore.ModeSentinel}
	s, q := redisstore.NewInFlightIn(rdb, l), redisstore.NewQueueIn(rdb, l)
	ctx := context.Background()
	if err := q.Init(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		if res, err := s.Admit(ctx, sentinelAdmission(fmt.Sprint("r_", i))); err != nil || res.Outcome != board.AdmitNew {
			t.Fatalf("admit %d = %+v, %v", i, res, err)
		}
	}
	old := set.master(t)
	set.signal(t, old, syscall.SIGKILL)
	rejoined := false
	// Started again from its own configuration, the old master is made a
	// replica of the new one by the sentinels.
	rejoin := func() {
		rejoined = true
		if out, err := exec.Command("redis-server", filepath.Join(set.dir, old+".conf")).CombinedOutput(); err != nil {
			t.Errorf("restart %s: %v %s", old, err, out)
		}
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + old})
		defer c.Close()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			info, err := c.Info(context.Background(), "replication").Result()
			if err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up") {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Errorf("the old master %s did not rejoin as a replica", old)
	}
	t.Cleanup(func() {
		if !rejoined {
			rejoin()
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for set.master(t) == old {
		if time.Now().After(deadline) {
			t.Fatal("the sentinels promoted no replica within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	seen := map[board.RequestID]bool{}
	deadline = time.Now().Add(30 * time.Second)
	for len(seen) < n && time.Now().Before(deadline) {
		got, err := q.Read(ctx, "after", time.Second)
		if err != nil {
			continue // the client is finding the new master
		}
		for _, d := range got {
			if _, err := s.Request(ctx, d.RequestID); err != nil {
				t.Fatalf("request %s lost its record: %v", d.RequestID, err)
			}
			seen[d.RequestID] = true
			if err := q.Ack(ctx, d.MessageID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("after the failover %d of %d acknowledged requests are on the stream", len(seen), n)
	}
	// A platform's retry of one of them, while the new master has no
	// replica, is refused as a new request would be (what it duplicates
	// cannot be shown to be on a replica); once the old master is back
	// as its replica, the retry is a duplicate.
	if res, err := s.Admit(ctx, sentinelAdmission("r_3")); !errors.Is(err, redisstore.ErrNotReplicated) {
		t.Fatalf("retry after the failover, no replica yet = %+v, %v; want ErrNotReplicated", res, err)
	}
	rejoin()
	if res, err := s.Admit(ctx, sentinelAdmission("r_3")); err != nil || res.Outcome != board.AdmitDuplicate {
		t.Fatalf("retry after the failover = %+v, %v; want a duplicate", res, err)
	}
}

// With its replica stopped, a sentinel set's master takes a request but
// no replica confirms it: the admission is refused as unavailable
// (ErrNotReplicated, 503 with Retry-After at the edge), and so is a retry
// while the replica is still away; the platform's retry once the replica
// is back is acknowledged as that same request,
// never as a second one.
func TestSentinelAdmissionRefusedWhenNoReplicaConfirms(t *testing.T) {
	set := newSentinelSet(t)
	rdb := bottest.RedisIn(t, redisstore.ModeSentinel)
	l := redisstore.Layout{Prefix: bottest.Prefix(), Mode: redisstore.ModeSentinel}
	s := redisstore.NewInFlightIn(rdb, l)
	ctx := context.Background()
	replica := set.replica(t)
	set.signal(t, replica, syscall.SIGSTOP)
	stopped := true
	t.Cleanup(func() {
		if stopped {
			set.signal(t, replica, syscall.SIGCONT)
		}
	})
	_, err := s.Admit(ctx, sentinelAdmission("r_lonely"))
	if !errors.Is(err, redisstore.ErrNotReplicated) || !errors.Is(err, board.ErrUnavailable) {
		t.Fatalf("admission with no replica = %v; want ErrNotReplicated, unavailable", err)
	}
	// The platform retries while the replica is still away: the first
	// attempt's entry is on the master alone, so acknowledging the retry
	// as its duplicate would lose it with the master.
	early := sentinelAdmission("r_early")
	early.DedupeKey = "console:c:r_lonely"
	if res, err := s.Admit(ctx, early); !errors.Is(err, redisstore.ErrNotReplicated) {
		t.Fatalf("a retry with no replica = %+v, %v; want ErrNotReplicated (not a duplicate of an entry only the master has)", res, err)
	}
	set.signal(t, replica, syscall.SIGCONT)
	stopped = false
	retry := sentinelAdmission("r_retry")
	retry.DedupeKey = "console:c:r_lonely"
	res, err := s.Admit(ctx, retry)
	lonely := redisstore.AdmittedID(s, "r_lonely", "console:c:r_lonely")
	if err != nil || res.Outcome != board.AdmitDuplicate || res.RequestID != lonely {
		t.Fatalf("the retry = %+v, %v; want a duplicate of %s", res, err, lonely)
	}
}
