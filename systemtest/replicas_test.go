package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

// replica is one `bobnet serve` process.
type replica struct {
	name string
	url  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

const replicaToken = "replica-test-token"

// startReplica runs the built binary as `bobnet serve` with env and waits
// until it answers /healthz.
func startReplica(t *testing.T, bin, name string, env []string) *replica {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(append(os.Environ(), env...), "BOBNET_LISTEN="+addr, "BOBNET_PUBLIC_URL=http://"+addr)
	logf, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, url: "http://" + addr, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(r.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-r.done
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("%s log:\n%s", name, b)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(r.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r
			}
		}
		select {
		case <-r.done:
			t.Fatalf("%s exited at start: %v", name, cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not come up", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// call sends a JSON request with the token; it returns the status (0 when
// the replica could not be reached) and the decoded answer.
func (r *replica) call(method, path string, body any) (int, map[string]any) {
	var rd *bytes.Reader
	if body != nil {
		js, _ := json.Marshal(body)
		rd = bytes.NewReader(js)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, r.url+path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+replicaToken)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// waitAnswered polls requests (on any live replica) until each is done or
// failed, and returns their proposal ids.
func waitAnswered(t *testing.T, ids []string, via ...*replica) map[string]string {
	t.Helper()
	proposals := map[string]string{}
	deadline := time.Now().Add(90 * time.Second)
	for _, id := range ids {
		for {
			var st map[string]any
			var code int
			for _, r := range via {
				if code, st = r.call("GET", "/api/v1/requests/"+id, nil); code == http.StatusOK {
					break
				}
			}
			if code == http.StatusOK && (st["state"] == "done" || st["state"] == "failed") {
				p, _ := st["proposal_id"].(string)
				if st["state"] != "done" || p == "" {
					t.Fatalf("request %s answered %v", id, st)
				}
				proposals[id] = p
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("request %s not answered: %d %v", id, code, st)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return proposals
}

func countRows(t *testing.T, pool *pgxpool.Pool, q string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Two `bobnet serve` processes on one Postgres and one Redis: requests
// spread over both are each answered exactly once; one killed with
// SIGKILL mid-plan loses nothing and doubles nothing; the other, sent
// SIGTERM during approvals, leaves every approval committed and answered
// or not started, never half, and stops within the shutdown budget.
func TestTwoReplicas(t *testing.T) {
	t.Parallel()
	bottest.Redis(t)
	bin := buildBobnet(t)
	model := plannertest.NewServer(t)
	plan := plannertest.NewspaperPlan(t)
	var delay atomic.Int64
	model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply {
		return plannertest.Reply{Content: plan, Delay: time.Duration(delay.Load())}
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
		"BOBNET_RECLAIM_IDLE=3s", "BOBNET_WORKERS=2", "BOBNET_USER_RATE=1000/1m", "BOBNET_CHANNEL_RATE=1000/1m",
	}
	a := startReplica(t, bin, "a", env)
	b := startReplica(t, bin, "b", env)

	submit := func(r *replica, i int) string {
		t.Helper()
		code, out := r.call("POST", fmt.Sprintf("/api/v1/channels/c%d/messages", i), map[string]string{"user": "alice", "text": "plan our daily research newspaper"})
		if code != http.StatusAccepted {
			t.Fatalf("%s: submit %d: %d %v", r.name, i, code, out)
		}
		return out["request_id"].(string)
	}

	// 50 requests spread over both: each answered once.
	var ids []string
	for i := range 50 {
		ids = append(ids, submit([]*replica{a, b}[i%2], i))
	}
	first := waitAnswered(t, ids, a, b)
	if n := countRows(t, pool, "SELECT count(*) FROM proposals"); n != 50 {
		t.Fatalf("proposals = %d, want 50", n)
	}
	for _, action := range []string{"requested", "proposed"} {
		if n := countRows(t, pool, "SELECT count(*) FROM audit_events WHERE action = $1", action); n != 50 {
			t.Fatalf("%s audit rows = %d, want 50", action, n)
		}
	}

	// A slow model, ten requests to a, and a killed while it plans them.
	delay.Store(int64(1500 * time.Millisecond))
	var slow []string
	for i := 50; i < 60; i++ {
		slow = append(slow, submit(a, i))
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(model.Requests()) <= 50 {
		if time.Now().After(deadline) {
			t.Fatal("the model never got the slow requests")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	second := waitAnswered(t, slow, b)
	if n := countRows(t, pool, "SELECT count(*) FROM proposals"); n != 60 {
		t.Fatalf("proposals after the kill = %d, want 60 (none lost, none doubled)", n)
	}
	delay.Store(0)

	// Approve all 60 on b, and SIGTERM b once the first board is made.
	a2 := startReplica(t, bin, "a2", env)
	var all []string
	for _, p := range first {
		all = append(all, p)
	}
	for _, p := range second {
		all = append(all, p)
	}
	var mu sync.Mutex
	answered := map[string]int{}
	var wg sync.WaitGroup
	var once sync.Once
	var termAt time.Time
	work := make(chan string)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				code, _ := b.call("POST", "/api/v1/proposals/"+p+"/approve", map[string]string{"user": "alice"})
				mu.Lock()
				answered[p] = code
				mu.Unlock()
				if code == http.StatusOK {
					once.Do(func() {
						termAt = time.Now()
						_ = b.cmd.Process.Signal(syscall.SIGTERM)
					})
				}
			}
		}()
	}
	for _, p := range all {
		work <- p
	}
	close(work)
	wg.Wait()
	select {
	case <-b.done:
		if d := time.Since(termAt); d > 12*time.Second {
			t.Errorf("b took %s to stop after SIGTERM", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("b did not stop after SIGTERM")
	}

	committed := 0
	for _, code := range answered {
		if code == http.StatusOK {
			committed++
		}
	}
	t.Logf("b answered %d approvals with 200 before it stopped; %d got no answer or a refusal", committed, len(all)-committed)

	// Never half: each proposal is approved with its whole board, or
	// pending with none; every 200 is an approval that committed.
	for _, p := range all {
		var state string
		if err := pool.QueryRow(context.Background(), "SELECT state FROM proposals WHERE id = $1", p).Scan(&state); err != nil {
			t.Fatal(err)
		}
		boards := countRows(t, pool, "SELECT count(*) FROM boards WHERE proposal_id = $1", p)
		cards := countRows(t, pool, "SELECT count(*) FROM cards WHERE proposal_id = $1", p)
		switch {
		case state == "approved" && boards == 1 && cards == 10:
		case state == "pending" && boards == 0 && cards == 0:
			if answered[p] == http.StatusOK {
				t.Fatalf("%s answered 200 but is pending", p)
			}
		default:
			t.Fatalf("%s half done: state %s, %d boards, %d cards (answer %d)", p, state, boards, cards, answered[p])
		}
	}
	// What b did not get to, a2 approves now: nothing was lost.
	for _, p := range all {
		code, out := a2.call("POST", "/api/v1/proposals/"+p+"/approve", map[string]string{"user": "alice"})
		if code == http.StatusConflict && out["state"] == "approved" {
			continue
		}
		if code != http.StatusOK {
			t.Fatalf("approve %s on a2: %d %v", p, code, out)
		}
	}
	if n := countRows(t, pool, "SELECT count(*) FROM boards"); n != 60 {
		t.Fatalf("boards = %d, want 60", n)
	}
	if n := countRows(t, pool, "SELECT count(*) FROM card_links"); n != 60*13 {
		t.Fatalf("links = %d, want %d", n, 60*13)
	}
}
