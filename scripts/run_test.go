// Package scripts holds the tests of the shell scripts behind make run and
// make test, driven as a person would drive them.
package scripts

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// freeAddr is a loopback address nothing listens on (at the time of asking).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runDir is a folder for .run that the unprivileged postgres user can use
// when the tests run as root (services.sh hands it over).
func runDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "bobnet-run-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Whatever happened, leave no server behind.
		_ = exec.Command("./services.sh", "stop", dir).Run()
		_ = os.RemoveAll(dir)
	})
	return dir
}

// safeBuffer collects a process's output while it runs.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// makeRun is `make run` with its data in dir, serving on listen.
func makeRun(ctx context.Context, dir, listen string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "./run.sh")
	cmd.Env = append(os.Environ(), "BOBNET_RUN_DIR="+dir, "BOBNET_LISTEN="+listen, "OPENAI_BASE_URL=http://127.0.0.1:1/v1")
	// Its own process group, so the test can interrupt it as Ctrl-C would.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}

func get(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestMakeRunTwiceRefusesTheSecondAndKeepsTheFirst starts make run, then
// tries a second one in the same checkout and one on a busy port: both
// refuse with a clear message and a non-zero exit, and the first BobNet
// keeps its Postgres and Redis (with Redis writing its append-only file).
func TestMakeRunTwiceRefusesTheSecondAndKeepsTheFirst(t *testing.T) {
	// make test sets REDIS_URL after installing the servers run.sh uses.
	if os.Getenv("REDIS_URL") == "" {
		t.Skip("REDIS_URL is not set: Postgres and Redis may not be installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir, listen := runDir(t), freeAddr(t)
	first := makeRun(ctx, dir, listen)
	var firstOut safeBuffer
	first.Stdout, first.Stderr = &firstOut, &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	for get("http://"+listen+"/readyz") != http.StatusOK {
		select {
		case err := <-exited:
			t.Fatalf("make run exited: %v\n%s", err, firstOut.String())
		case <-ctx.Done():
			t.Fatalf("make run never became ready:\n%s", firstOut.String())
		case <-time.After(200 * time.Millisecond):
		}
	}

	// A second make run in the same checkout.
	out, err := makeRun(ctx, dir, freeAddr(t)).CombinedOutput()
	if err == nil {
		t.Fatalf("second make run succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), "already running in this checkout: http://"+listen+"/ (pid ") {
		t.Errorf("second make run says:\n%s", out)
	}
	if code := get("http://" + listen + "/readyz"); code != http.StatusOK {
		t.Errorf("after the second make run the first answers readyz %d:\n%s", code, firstOut.String())
	}

	// Another checkout asking for the same port.
	out, err = makeRun(ctx, runDir(t), listen).CombinedOutput()
	if err == nil || !strings.Contains(string(out), listen+" (BOBNET_LISTEN) is already in use") {
		t.Errorf("make run on a busy port: %v\n%s", err, out)
	}
	if code := get("http://" + listen + "/readyz"); code != http.StatusOK {
		t.Errorf("after the busy-port run the first answers readyz %d", code)
	}

	// Redis keeps an append-only file in .run.
	port, err := os.ReadFile(filepath.Join(dir, "redis.port"))
	if err != nil {
		t.Fatal(err)
	}
	aof, err := exec.Command("redis-cli", "-p", strings.TrimSpace(string(port)), "config", "get", "appendonly").CombinedOutput()
	if err != nil || !strings.Contains(string(aof), "yes") {
		t.Errorf("redis appendonly: %v %s", err, aof)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "redis", "appendonlydir", "*.aof")); len(files) == 0 {
		t.Errorf("no append-only file under %s", filepath.Join(dir, "redis"))
	}

	// Ctrl-C stops BobNet and both servers, and frees the checkout.
	if err := syscall.Kill(-first.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("make run after Ctrl-C: %v\n%s", err, firstOut.String())
		}
	case <-ctx.Done():
		t.Fatal("make run did not stop on Ctrl-C")
	}
	if _, err := os.Stat(filepath.Join(dir, "redis.pid")); !os.IsNotExist(err) {
		t.Errorf("redis still running after Ctrl-C: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bobnet.running")); !os.IsNotExist(err) {
		t.Errorf("run info left behind: %v", err)
	}
}

// post sends a JSON body and decodes the JSON answer into out.
func post(t *testing.T, url, body string, want int, out any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("POST %s: %v: %s", url, err, b)
	}
}

// TestMakeDemoMakesABoardWithNoModelServer runs make demo with no model
// server anywhere: it starts without warning that the model does not
// answer, a request in the console gets the canned plan, labelled as
// canned, and approving it makes a board.
func TestMakeDemoMakesABoardWithNoModelServer(t *testing.T) {
	if os.Getenv("REDIS_URL") == "" {
		t.Skip("REDIS_URL is not set: Postgres and Redis may not be installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir, listen := runDir(t), freeAddr(t)
	start := time.Now()
	demo := makeRun(ctx, dir, listen)
	demo.Env = append(demo.Env, "BOBNET_DEMO=1")
	var out safeBuffer
	demo.Stdout, demo.Stderr = &out, &out
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- demo.Wait() }()
	defer func() {
		_ = syscall.Kill(-demo.Process.Pid, syscall.SIGINT)
		<-exited
	}()
	for get("http://"+listen+"/readyz") != http.StatusOK {
		select {
		case err := <-exited:
			t.Fatalf("make demo exited: %v\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("make demo never became ready:\n%s", out.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	ready := time.Now()
	// The canned model answers BobNet's start-up probe.
	if strings.Contains(out.String(), "does not answer yet") {
		t.Errorf("make demo warned that the model server does not answer:\n%s", out.String())
	}
	base := "http://" + listen + "/api/v1"
	var req struct {
		RequestID string `json:"request_id"`
	}
	post(t, base+"/channels/demo/messages", `{"user":"alice","text":"plan our daily research newspaper"}`, http.StatusAccepted, &req)
	var status struct {
		State      string `json:"state"`
		ProposalID string `json:"proposal_id"`
		Error      string `json:"error"`
	}
	for status.ProposalID == "" {
		resp, err := http.Get(base + "/requests/" + req.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(resp.Body).Decode(&status)
		resp.Body.Close()
		if status.State == "failed" || ctx.Err() != nil {
			t.Fatalf("request %s: %+v\n%s", req.RequestID, status, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var proposal struct {
		Plan struct {
			Assumptions []string `json:"assumptions"`
		} `json:"plan"`
	}
	resp, err := http.Get(base + "/proposals/" + status.ProposalID)
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(resp.Body).Decode(&proposal)
	resp.Body.Close()
	if len(proposal.Plan.Assumptions) == 0 || !strings.HasPrefix(proposal.Plan.Assumptions[0], "Canned demo model") {
		t.Errorf("the demo plan is not labelled as canned: %+v", proposal.Plan.Assumptions)
	}
	var approved struct {
		BoardID string `json:"board_id"`
	}
	post(t, base+"/proposals/"+status.ProposalID+"/approve", `{"user":"alice"}`, http.StatusOK, &approved)
	if code := get("http://" + listen + "/boards/" + approved.BoardID); approved.BoardID == "" || code != http.StatusOK {
		t.Fatalf("board %q: %d", approved.BoardID, code)
	}
	t.Logf("make demo: ready %s after start, a board %s later", ready.Sub(start).Round(time.Millisecond), time.Since(ready).Round(time.Millisecond))
}
