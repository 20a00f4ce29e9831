package systemtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

// runnerMark is in every runner profile's instructions, so the scripted
// model tells a card's work from planning.
const runnerMark = "RUNNER PROFILE"

// modelProfilesDir writes the four newspaper profiles, all worked by the
// model without review.
func modelProfilesDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "bobnet-profiles-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for _, name := range []string{"Researcher", "Planner", "Reviewer", "Coder"} {
		sub := filepath.Join(dir, strings.ToLower(name))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		md := fmt.Sprintf("---\nname: %s\ndescription: The %s of the newspaper.\nrunner: model\nreview: none\n---\n%s: work the card.\n", name, name, runnerMark)
		if err := os.WriteFile(filepath.Join(sub, "AGENT.md"), []byte(md), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A run of the newspaper across two `bobnet serve` processes, one killed
// with SIGKILL while the model works a card it holds: the other takes the
// card over once its lease ends, the run ends done, and no card is worked
// twice at once or moved to Done twice.
func TestReplicaKilledMidRun(t *testing.T) {
	t.Parallel()
	bottest.Redis(t)
	bin := buildBobnet(t)
	model := plannertest.NewServer(t)
	plan := plannertest.NewspaperPlan(t)
	var mu sync.Mutex
	calls := map[string]int{}
	firstCard := make(chan string, 1)
	model.Handle(func(req openai.ChatCompletionRequest) plannertest.Reply {
		if !strings.Contains(req.Messages[0].Content, runnerMark) {
			return plannertest.Reply{Content: plan}
		}
		handle := strings.TrimSuffix(strings.Fields(plannertest.LastUserMessage(req))[1], ".")
		mu.Lock()
		calls[handle]++
		mu.Unlock()
		select {
		case firstCard <- handle:
		default:
		}
		return plannertest.Reply{Content: "Findings of " + handle, Delay: 1500 * time.Millisecond}
	})
	dbURL := storetest.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	env := []string{
		"DATABASE_URL=" + dbURL, "REDIS_URL=" + os.Getenv("REDIS_URL"), "BOBNET_REDIS_PREFIX=" + bottest.Prefix(),
		"OPENAI_BASE_URL=" + model.URL(), "BOBNET_MODEL=test-model", "BOBNET_API_TOKEN=" + replicaToken,
		"BOBNET_RECLAIM_IDLE=3s", "BOBNET_RUN_WORKERS=2", "BOBNET_PROFILES_DIR=" + modelProfilesDir(t),
	}
	a := startReplica(t, bin, "a", env)

	code, out := a.call("POST", "/api/v1/channels/newsroom/messages", map[string]string{"user": "alice", "text": "plan our daily research newspaper"})
	if code != http.StatusAccepted {
		t.Fatalf("message: %d %v", code, out)
	}
	proposal := waitAnswered(t, []string{out["request_id"].(string)}, a)[out["request_id"].(string)]
	code, out = a.call("POST", "/api/v1/proposals/"+proposal+"/approve", map[string]string{"user": "alice"})
	if code != http.StatusOK {
		t.Fatalf("approve: %d %v", code, out)
	}
	boardID := out["board_id"].(string)
	code, out = a.call("POST", "/api/v1/boards/"+boardID+"/runs", map[string]string{"user": "alice"})
	if code != http.StatusCreated {
		t.Fatalf("start the run: %d %v", code, out)
	}
	runID := out["id"].(string)

	// a takes the first card (the only one without dependencies); b
	// comes up while a works it, and a is killed in the middle.
	var held string
	select {
	case held = <-firstCard:
	case <-time.After(60 * time.Second):
		t.Fatal("no card was worked")
	}
	b := startReplica(t, bin, "b", env)
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done

	deadline := time.Now().Add(3 * time.Minute)
	var run map[string]any
	for {
		code, run = b.call("GET", "/api/v1/runs/"+runID, nil)
		if code == http.StatusOK && run["state"] != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end: %d %v", code, run)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if run["state"] != "done" {
		t.Fatalf("run ended %v", run)
	}
	mu.Lock()
	defer mu.Unlock()
	cards := run["cards"].([]any)
	if len(cards) != 10 {
		t.Fatalf("%d cards in the run", len(cards))
	}
	for _, c := range cards {
		c := c.(map[string]any)
		h := c["handle"].(string)
		want := 1
		if h == held {
			want = 2 // a's attempt, cut short, then b's
		}
		if int(c["attempts"].(float64)) != want || calls[h] != want {
			t.Errorf("%s: %v attempts, %d model calls; want %d", h, c["attempts"], calls[h], want)
		}
		if c["status"] != "Done" || c["output"] != "Findings of "+h {
			t.Errorf("%s: %v with output %q", h, c["status"], c["output"])
		}
	}
	// Each card went to Done once.
	if n := countRows(t, pool, `SELECT count(*) FROM audit_events a, jsonb_array_elements(a.detail->'changes') ch
WHERE a.action = 'card_changed' AND a.board_id = $1 AND ch->>'field' = 'status' AND ch->>'to' = 'Done'`, boardID); n != 10 {
		t.Errorf("%d moves to Done, want 10", n)
	}
}
