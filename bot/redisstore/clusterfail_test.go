package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/redisstore"
)

// ownCluster starts a 6-node cluster of the test's own with
// scripts/rediscluster.sh (killing a master of the shared one would
// disturb the tests running on it) and returns its URL and folder.
func ownCluster(t *testing.T) (string, string) {
	t.Helper()
	if os.Getenv("REDIS_CLUSTER_URL") == "" {
		t.Skip("REDIS_CLUSTER_URL is not set; scripts/test.sh starts the Redis Cluster tests")
	}
	dir := t.TempDir()
	script, err := filepath.Abs("../../scripts/rediscluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Command(script, "stop", dir).Run() })
	out, err := exec.Command(script, "cluster", dir).Output()
	if err != nil {
		t.Fatalf("start a cluster: %v", err)
	}
	m := regexp.MustCompile(`REDIS_CLUSTER_URL='([^']+)'`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no REDIS_CLUSTER_URL in %s", out)
	}
	return string(m[1]), dir
}

// A master of a Redis Cluster killed (SIGKILL) costs seconds: every
// request acknowledged before is still queued, with its record, once its
// replica has taken over, and requests of the channels on that master are
// taken again within seconds: cluster-node-timeout (2 s), the replica's
// election, the slot map reloaded on the failed connections, and — since
// a request waits for a replica — the killed server started again, as an
// orchestrator would, and back in sync as the new master's replica.
func TestClusterFailoverCostsSeconds(t *testing.T) {
	url, dir := ownCluster(t)
	opts, err := redisstore.ParseURL(redisstore.ModeCluster, url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redisstore.Connect(opts, 8)
	t.Cleanup(func() { _ = rdb.Close() })
	l := redisstore.Layout{Prefix: "failover", Mode: redisstore.ModeCluster}
	s, q := redisstore.NewInFlightIn(rdb, l), redisstore.NewQueueIn(rdb, l)
	ctx := context.Background()
	if err := q.Init(ctx); err != nil {
		t.Fatal(err)
	}
	admission := func(id string, channel int) board.Admission {
		return board.Admission{Record: board.RequestRecord{Request: board.Request{ID: board.RequestID(id), Text: "plan"}},
			DedupeKey: "e-" + id, DedupeTTL: time.Hour, UserKey: "user:" + id, ChannelKey: fmt.Sprint("channel:console:c", channel)}
	}
	const n = 32
	for i := range n {
		if res, err := s.Admit(ctx, admission(fmt.Sprint("r_", i), i)); err != nil || res.Outcome != board.AdmitNew {
			t.Fatalf("admit %d = %+v, %v", i, res, err)
		}
	}
	// The master of shard 0 (some of the channels' streams live there).
	node, err := rdb.(*redis.ClusterClient).MasterForKey(ctx, "failover:requests:{0}")
	if err != nil {
		t.Fatal(err)
	}
	victim := strings.TrimPrefix(node.Options().Addr, "127.0.0.1:")
	raw, err := os.ReadFile(filepath.Join(dir, victim+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Once the replica is promoted the killed server is started again
	// (it rejoins as a replica from its nodes.conf).
	promoted := func() bool {
		for _, p := range strings.Fields(mustRead(t, filepath.Join(dir, "cluster.ports"))) {
			if p == victim {
				continue
			}
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + p})
			nodes, err := c.ClusterNodes(ctx).Result()
			_ = c.Close()
			if err == nil && regexp.MustCompile(`127\.0\.0\.1:`+victim+`@\S+ \S*fail`).MatchString(nodes) {
				return true
			}
		}
		return false
	}
	for !promoted() {
		if time.Since(killed) > 30*time.Second {
			t.Fatal("the cluster did not mark the killed master failed within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	failed := time.Since(killed)
	if out, err := exec.Command("redis-server", filepath.Join(dir, victim+".conf")).CombinedOutput(); err != nil {
		t.Fatalf("restart %s: %v %s", victim, err, out)
	}
	// Requests of every channel, until each is taken again.
	var window time.Duration
	for i := 0; ; i++ {
		if time.Since(killed) > 30*time.Second {
			t.Fatal("requests still refused 30 s after the master died")
		}
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ok := 0
		for c := range n {
			if res, err := s.Admit(actx, admission(fmt.Sprintf("r_after%d_%d", i, c), c)); err == nil && res.Outcome == board.AdmitNew {
				ok++
			}
		}
		cancel()
		if ok == n {
			window = time.Since(killed)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the master was marked failed %s after its SIGKILL; requests were refused for %s in all", failed.Round(100*time.Millisecond), window.Round(100*time.Millisecond))
	if window > 20*time.Second { // 7.6 s on an idle 2-core machine; the race detector and a busy machine slow it
		t.Errorf("a failover cost %s; want seconds", window)
	}
	total, err := q.Len(ctx) // those before and those after
	if err != nil {
		t.Fatal(err)
	}
	seen := readAll(t, q, int(total))
	for i := range n {
		id := board.RequestID(fmt.Sprint("r_", i))
		if !seen[id] {
			_, recErr := s.Request(ctx, id)
			t.Errorf("acknowledged request %s is not on the stream after the failover (its record: %v)", id, recErr)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
