package soak

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/bot/redisstore"
)

// soakStreams is how many request stream shards the replicas use on the
// cluster: BobNet's default in cluster mode (BOBNET_REDIS_STREAMS unset).
const soakStreams = 16

// startCluster starts the failover soak's own 6-node Redis Cluster
// (scripts/rediscluster.sh: 3 masters and 3 replicas, append-only files
// with appendfsync always, cluster-node-timeout 2 s) and points the
// replicas at it in cluster mode. Its own, not make test's shared
// cluster (REDIS_CLUSTER_URL): the soak kills one of its masters.
func (s *services) startCluster(t *testing.T) {
	t.Helper()
	s.clusterDir = filepath.Join(filepath.Dir(s.dir), "rediscluster")
	script := filepath.Join(s.root, "scripts", "rediscluster.sh")
	t.Cleanup(func() {
		if out, err := exec.Command(script, "stop", s.clusterDir).CombinedOutput(); err != nil {
			t.Errorf("rediscluster.sh stop: %v\n%s", err, out)
		}
	})
	c := exec.Command(script, "cluster", s.clusterDir)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("rediscluster.sh cluster: %v\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`REDIS_CLUSTER_URL='([^']+)'`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("rediscluster.sh cluster printed %q", stdout.String())
	}
	s.redisURL = m[1]
	s.redisEnv = []string{"BOBNET_REDIS_MODE=cluster"}
}

// cluster connects to the soak's cluster.
func (s *services) cluster() (*redis.ClusterClient, error) {
	opts, err := redis.ParseClusterURL(s.redisURL)
	if err != nil {
		return nil, fmt.Errorf("parse the cluster URL: %w", err)
	}
	return redis.NewClusterClient(opts), nil
}

// clusterFault SIGKILLs the master that took the most requests (summed
// over the request stream shards it holds, so the workload's channels
// feel it), waits until the cluster has marked it failed and promoted its
// replica, then starts the killed server again, as an orchestrator
// would: it rejoins as the new master's replica. Until then the new
// master has no replica, and admission, which waits for one (WAIT),
// refuses the requests of its slots; the table's refusal windows show
// that. It returns the fault's name and the failover's times.
func (s *services) clusterFault(t *testing.T) (string, string) {
	ctx := context.Background()
	rdb, err := s.cluster()
	if err != nil {
		t.Errorf("redis fault: %v", err)
		return "redis master fault (none made)", ""
	}
	defer rdb.Close()
	victim, took, err := busiestMaster(ctx, rdb)
	if err != nil {
		t.Errorf("redis fault: %v", err)
		return "redis master fault (none made)", ""
	}
	raw, err := os.ReadFile(filepath.Join(s.clusterDir, victim+".pid"))
	if err != nil {
		t.Errorf("redis fault: %v", err)
		return "redis master fault (none made)", ""
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Errorf("redis fault: SIGKILL %s: %v", victim, err)
		return "redis master fault (none made)", ""
	}
	t.Logf("fault: SIGKILL of the redis master on port %s (%d requests taken there so far)", victim, took)
	others := slices.DeleteFunc(strings.Fields(s.clusterPorts(t)), func(p string) bool { return p == victim })
	failedAt := s.waitCluster(t, others, killed, func(nodes, info string) bool {
		return regexp.MustCompile(`127\.0\.0\.1:` + victim + `@\S+ \S*fail[ ,]`).MatchString(nodes)
	})
	// Promoted: the killed master's line lists no slots (its replica
	// holds them) and the cluster serves every slot again.
	promotedAt := s.waitCluster(t, others, killed, func(nodes, info string) bool {
		for line := range strings.Lines(nodes) {
			if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], "127.0.0.1:"+victim+"@") {
				return len(f) <= 8 && strings.Contains(info, "cluster_state:ok")
			}
		}
		return false
	})
	if out, err := exec.Command("redis-server", filepath.Join(s.clusterDir, victim+".conf")).CombinedOutput(); err != nil {
		t.Errorf("redis fault: start %s again: %v\n%s", victim, err, out)
	}
	back := func() bool {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + victim})
		defer c.Close()
		info, err := c.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up")
	}
	for !back() {
		if time.Since(killed) > 60*time.Second {
			t.Errorf("redis fault: the killed master was not back as a replica within 60 s")
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	rejoined := time.Since(killed)
	r := func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }
	times := fmt.Sprintf("%s / %s / %s", r(failedAt), r(promotedAt), r(rejoined))
	t.Logf("fault: redis master marked failed / replica promoted / killed server back as its replica, after the SIGKILL: %s", times)
	return "redis master SIGKILLed", times
}

// clusterPorts is the cluster's ports as rediscluster.sh wrote them.
func (s *services) clusterPorts(t *testing.T) string {
	raw, err := os.ReadFile(filepath.Join(s.clusterDir, "cluster.ports"))
	if err != nil {
		t.Errorf("redis fault: %v", err)
	}
	return string(raw)
}

// waitCluster polls CLUSTER NODES and CLUSTER INFO on the nodes of ports
// until done holds on one of them (30 s at most), and returns how long
// after since it held.
func (s *services) waitCluster(t *testing.T, ports []string, since time.Time, done func(nodes, info string) bool) time.Duration {
	ctx := context.Background()
	for time.Since(since) < 30*time.Second {
		for _, p := range ports {
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + p})
			nodes, err1 := c.ClusterNodes(ctx).Result()
			info, err2 := c.ClusterInfo(ctx).Result()
			_ = c.Close()
			if err1 == nil && err2 == nil && done(nodes, info) {
				return time.Since(since)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("redis fault: the cluster did not get there within 30 s of the SIGKILL")
	return time.Since(since)
}

// busiestMaster is the port of the master holding the request stream
// shards that took the most entries, and how many.
func busiestMaster(ctx context.Context, rdb *redis.ClusterClient) (string, int64, error) {
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		return "", 0, fmt.Errorf("cluster shards: %w", err)
	}
	// masterOf is the port of the master serving slot.
	masterOf := func(slot int64) string {
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if slot < r.Start || slot > r.End {
					continue
				}
				for _, n := range sh.Nodes {
					if n.Role == "master" {
						return strconv.FormatInt(n.Port, 10)
					}
				}
			}
		}
		return ""
	}
	took := map[string]int64{}
	for n := range soakStreams {
		key := fmt.Sprintf("bobnet:requests:{%d}", n) // BOBNET_REDIS_PREFIX unset
		slot := redisstore.Slot(key)
		master := masterOf(int64(slot))
		if master == "" {
			return "", 0, fmt.Errorf("no master serves slot %d", slot)
		}
		if _, ok := took[master]; !ok {
			took[master] = 0 // a master with no request yet is one too
		}
		info, err := rdb.XInfoStream(ctx, key).Result()
		if err != nil {
			continue // a shard no request went to
		}
		took[master] += info.EntriesAdded
	}
	best, most := "", int64(-1)
	for port, n := range took {
		if n > most {
			best, most = port, n
		}
	}
	return best, most, nil
}

type keyFamily struct {
	family string
	bytes  int64
}

// redisFootprint sums MEMORY USAGE over the keys of each family (the
// part of the key after BobNet's prefix, up to the next colon), over
// every master of the cluster, largest first.
func redisFootprint(s *services) ([]keyFamily, error) {
	rdb, err := s.cluster()
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	ctx := context.Background()
	var mu sync.Mutex
	sums := map[string]int64{}
	err = rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		iter := node.Scan(ctx, 0, "*", 500).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			parts := strings.SplitN(key, ":", 3)
			fam := key
			if len(parts) > 1 {
				fam = parts[1]
			}
			n, err := node.MemoryUsage(ctx, key).Result()
			if err != nil {
				continue // expired meanwhile
			}
			mu.Lock()
			sums[fam] += n
			mu.Unlock()
		}
		return iter.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("scan the masters: %w", err)
	}
	var out []keyFamily
	for f, n := range sums {
		out = append(out, keyFamily{f, n})
	}
	slices.SortFunc(out, func(a, b keyFamily) int { return int(b.bytes - a.bytes) })
	return out, nil
}
