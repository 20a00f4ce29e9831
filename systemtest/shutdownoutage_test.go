package systemtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

// shutdownGrace is the time a container platform grants after SIGTERM
// (docs/operations.md, "Shutdown"), which BobNet promises to exit within.
const shutdownGrace = 30 * time.Second

// TestSIGTERMWithRedisAndPostgresGone: `bobnet serve` posts a preview to
// Slack, and while Slack is answering, Redis and Postgres both go away, so
// recording where the preview went fails and is retried. SIGTERM then
// makes the process exit within the 30 s it is granted. Before, the retry
// ran under a context nothing ended and the process never exited.
func TestSIGTERMWithRedisAndPostgresGone(t *testing.T) {
	t.Parallel()
	bottest.Redis(t) // the services are there to test with
	bin := buildBobnet(t)
	rs := &redisServer{port: freePort(t), dir: t.TempDir()}
	rs.start(t)
	t.Cleanup(rs.stop)
	dbURL, err := url.Parse(storetest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	pg := newTCPProxy(t, dbURL.Host)
	dbURL.Host = pg.addr

	// Slack takes the preview and answers only when the test says.
	entered, release := make(chan struct{}, 1), make(chan struct{})
	slackAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat.postMessage") {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": "C_NEWS", "ts": "1700000200.000100", "user_id": "UBOBNET"})
	}))
	defer slackAPI.Close()
	var once bool
	releaseSlack := func() {
		if !once {
			once = true
			close(release)
		}
	}
	defer releaseSlack()
	model := plannertest.NewServer(t)
	plan := plannertest.NewspaperPlan(t)
	model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: plan} })

	a := startReplica(t, bin, "a", []string{
		"DATABASE_URL=" + dbURL.String(), fmt.Sprintf("REDIS_URL=redis://127.0.0.1:%d/0", rs.port), "BOBNET_REDIS_PREFIX=" + bottest.Prefix(),
		"OPENAI_BASE_URL=" + model.URL(), "BOBNET_MODEL=test-model",
		"SLACK_BOT_TOKEN=xoxb-1", "SLACK_SIGNING_SECRET=shh", "SLACK_API_URL=" + slackAPI.URL + "/api/",
		"BOBNET_MODEL_STREAM=off", // not about drafts: the preview is posted as a message
	})
	ts := "1700000200.000001"
	event, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": "EvGone", "event_time": time.Now().Unix(),
		"event": map[string]any{"type": "app_mention", "user": "U_ALICE", "text": "<@UBOBNET> plan our daily research newspaper", "ts": ts, "channel": "C_NEWS", "event_ts": ts},
	})
	if code := postSigned(t, a.url+"/slack/events", "application/json", string(event)); code != http.StatusOK {
		t.Fatalf("mention: %d", code)
	}
	select {
	case <-entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the preview was never posted")
	}
	rs.stop()
	pg.cut()
	releaseSlack()
	time.Sleep(time.Second) // recording the preview fails, and is retried

	begin := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.done:
	case <-time.After(shutdownGrace + 5*time.Second):
		t.Fatalf("bobnet serve did not exit within %v of SIGTERM with Redis and Postgres gone", shutdownGrace+5*time.Second)
	}
	took := time.Since(begin)
	t.Logf("exited %v after SIGTERM", took)
	if took > shutdownGrace {
		t.Fatalf("bobnet serve took %v to exit after SIGTERM, more than the %v it is granted", took, shutdownGrace)
	}
}
