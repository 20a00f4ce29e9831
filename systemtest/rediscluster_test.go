package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
)

// BOBNET_REDIS_MODE=cluster serves the whole flow on the 6-node Redis
// Cluster of REDIS_CLUSTER_URL (scripts/rediscluster.sh): a Slack mention,
// delivered twice as Slack retries, is one request; its preview is posted
// with Approve; twenty clicks on Approve at once make one board; and the
// request stream's sixteen shards are spread over the cluster's masters.
func TestRedisClusterServesTheWholeFlow(t *testing.T) {
	t.Parallel()
	clusterURL := os.Getenv("REDIS_CLUSTER_URL")
	rdb := bottest.RedisIn(t, redisstore.ModeCluster) // skips without REDIS_CLUSTER_URL
	sink := newReviewSlack(t)
	prefix := bottest.Prefix()
	a := start(t, withEnv(map[string]string{
		"REDIS_URL": clusterURL, "BOBNET_REDIS_MODE": "cluster", "BOBNET_REDIS_PREFIX": prefix,
		"BOBNET_API_TOKEN": "test-token", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "shh", "SLACK_API_URL": sink.srv.URL + "/api/",
		"BOBNET_MODEL_STREAM": "off", // not about drafts: the preview is posted as a message
	}))
	mention, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T1", "event_id": "EvCluster1",
		"event": map[string]any{"type": "app_mention", "user": "U_ALICE", "text": "<@UBOBNET> plan our daily research newspaper", "ts": "1700000000.000001", "channel": "C_NEWS"},
	})
	for range 2 { // Slack's retry of the same event
		if code, body := signedSlack(t, a, "/slack/events", "application/json", string(mention)); code != http.StatusOK {
			t.Fatalf("mention: %d %s", code, body)
		}
	}
	preview := sink.waitFor(t, "preview", func(c reviewCall) bool { return previewApprove.MatchString(c.Form.Get("blocks")) })
	pid := previewApprove.FindStringSubmatch(preview.Form.Get("blocks"))[1]

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			payload, _ := json.Marshal(map[string]any{
				"type": "block_actions", "trigger_id": fmt.Sprint("T-approve-", i), "user": map[string]any{"id": "U_ALICE"},
				"channel":   map[string]any{"id": "C_NEWS"},
				"container": map[string]any{"type": "message", "message_ts": preview.TS, "channel_id": "C_NEWS", "thread_ts": "1700000000.000001"},
				"message":   map[string]any{"ts": preview.TS, "thread_ts": "1700000000.000001"},
				"actions":   []map[string]any{{"action_id": "bobnet_approve", "block_id": "b", "type": "button", "value": pid, "action_ts": "1"}},
			})
			if code, body := signedSlack(t, a, "/slack/interactivity", "application/x-www-form-urlencoded", "payload="+url.QueryEscape(string(payload))); code != http.StatusOK {
				t.Errorf("approve click: %d %s", code, body)
			}
		})
	}
	wg.Wait()
	sink.waitFor(t, "the board's link", func(c reviewCall) bool {
		return strings.Contains(c.Form.Get("text")+c.Form.Get("blocks"), "/boards/")
	})

	pool, err := pgxpool.New(context.Background(), a.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	deadline := time.Now().Add(10 * time.Second)
	for countRows(t, pool, "SELECT count(*) FROM boards WHERE proposal_id = $1", pid) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // a second board would be written by now
	if n := countRows(t, pool, "SELECT count(*) FROM boards WHERE proposal_id = $1", pid); n != 1 {
		t.Fatalf("%d boards for the proposal; want one", n)
	}
	if n := countRows(t, pool, "SELECT count(*) FROM audit_events WHERE action = 'requested'"); n != 1 {
		t.Fatalf("%d requests recorded for one mention delivered twice; want one", n)
	}
	if n := len(sink.matching(func(c reviewCall) bool {
		return previewApprove.MatchString(c.Form.Get("blocks")) && c.Method == "chat.postMessage"
	})); n != 1 {
		t.Fatalf("%d previews posted; want one", n)
	}

	// The shards live on more than one master.
	masters := map[string]bool{}
	for n := range 16 {
		key := fmt.Sprintf("%s:requests:{%d}", prefix, n)
		if rdb.Exists(context.Background(), key).Val() != 1 {
			t.Fatalf("shard %s missing", key)
		}
		node, err := rdb.(*redis.ClusterClient).MasterForKey(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		masters[node.Options().Addr] = true
	}
	if len(masters) < 2 {
		t.Fatalf("sixteen shards on %d master(s); want them spread", len(masters))
	}
}
