package soak

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// services are the soak's own Postgres and Redis (append-only file on),
// started by scripts/services.sh so that they can be stopped and started
// again on the same ports while BobNet runs; the failover soak's are a
// Postgres primary with its standby (scripts/pgstandby.sh) and a 6-node
// Redis Cluster (scripts/rediscluster.sh) instead.
type services struct {
	root, dir   string
	databaseURL string
	redisURL    string
	// pairDir is the Postgres primary and standby's folder of the
	// failover soak (databaseURL then names both); empty otherwise.
	pairDir string
	// clusterDir is the Redis Cluster's folder of the failover soak
	// (redisURL then names its nodes in go-redis's cluster form); empty
	// otherwise.
	clusterDir string
	// redisEnv is what the replicas need besides REDIS_URL to reach
	// this Redis (the cluster's BOBNET_REDIS_MODE); none for one Redis.
	redisEnv []string

	mu        sync.Mutex
	restarted time.Time // when the latest restart of Postgres ended
}

// pgBackSince is when Postgres last came back from a restart (zero if
// never).
func (s *services) pgBackSince() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarted
}

// startServices starts the soak's Postgres and Redis (services.sh).
func startServices(t *testing.T, root string) *services {
	t.Helper()
	s := newServices(t, root)
	out := s.run(t, "start")
	for line := range strings.Lines(out) {
		k, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "export "), "=")
		switch {
		case ok && k == "DATABASE_URL":
			s.databaseURL = v
		case ok && k == "REDIS_URL":
			s.redisURL = v
		}
	}
	if s.databaseURL == "" || s.redisURL == "" {
		t.Fatalf("services.sh start printed %q", out)
	}
	t.Cleanup(func() { s.run(t, "stop") })
	return s
}

// newServices makes the folder the soak's servers keep their data in,
// removed at the end, and starts none: startServices starts the single
// Postgres and Redis, the failover soak its pair and cluster instead.
func newServices(t *testing.T, root string) *services {
	t.Helper()
	// Not t.TempDir: Postgres runs as another user (it refuses root) and
	// must be able to reach its folder, which t.TempDir's 0700 parent
	// forbids.
	base, err := os.MkdirTemp("", "bobnet-soak-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	return &services{root: root, dir: filepath.Join(base, "svc")}
}

// run calls scripts/services.sh cmd on the soak's folder and returns what
// it printed on stdout.
func (s *services) run(t *testing.T, cmd string) string {
	t.Helper()
	c := exec.Command(filepath.Join(s.root, "scripts", "services.sh"), cmd, s.dir)
	// The soak's Redis keeps an append-only file, as production does.
	c.Env = append(os.Environ(), "BOBNET_REDIS_MEMORY_ONLY=")
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Errorf("services.sh %s: %v\n%s", cmd, err, stderr.String())
	}
	return stdout.String()
}

// restart stops one of the services ("postgres" or "redis"), leaves it
// down for a moment and starts it again on the same port.
func (s *services) restart(t *testing.T, which string, down time.Duration) {
	s.run(t, "stop-"+which)
	time.Sleep(down)
	s.run(t, "start")
	if which == "postgres" {
		s.mu.Lock()
		s.restarted = time.Now()
		s.mu.Unlock()
	}
}

// replica is one `bobnet serve` process on a fixed address, so that it can
// be killed and started again where clients expect it.
type replica struct {
	name, addr, url string
	bin             string
	env             []string
	logPath         string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func newReplica(t *testing.T, bin, name string, env []string) *replica {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	r := &replica{name: name, addr: addr, url: "http://" + addr, bin: bin, env: env, logPath: filepath.Join(t.TempDir(), name+".log")}
	t.Cleanup(func() {
		r.signal(syscall.SIGKILL)
		r.wait(10 * time.Second)
		if t.Failed() {
			r.tailLog(t, 60)
			r.keepLog(t)
		}
	})
	return r
}

// keepLog copies the replica's whole log into BOBNET_SOAK_LOGS, when set,
// to read after a failed soak.
func (r *replica) keepLog(t *testing.T) {
	dir := os.Getenv("BOBNET_SOAK_LOGS")
	if dir == "" {
		return
	}
	b, err := os.ReadFile(r.logPath)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, t.Name()+"-"+r.name+".log"), b, 0o644)
	}
	if err != nil {
		t.Logf("keep %s's log: %v", r.name, err)
	}
}

// start runs the process and waits until it answers /healthz.
func (r *replica) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(r.bin, "serve")
	cmd.Env = append(append(os.Environ(), r.env...), "BOBNET_LISTEN="+r.addr, "BOBNET_PUBLIC_URL="+r.url)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(done) }()
	r.mu.Lock()
	r.cmd, r.done = cmd, done
	r.mu.Unlock()
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(r.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-done:
			t.Errorf("%s exited at start: %v", r.name, cmd.ProcessState)
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Errorf("%s did not come up", r.name)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (r *replica) signal(sig os.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Signal(sig)
	}
}

// wait waits for the process to exit; false when it did not within d.
func (r *replica) wait(d time.Duration) bool {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// grepLogs returns the lines of the replicas' logs that hold any of
// words, and the lines, in any replica's log, naming a request those
// lines named (request=r_…): a Slack event's log on the replica that
// took it leads to its request's on the replica that planned it.
func grepLogs(replicas []*replica, words ...string) []string {
	logs := make([]string, len(replicas))
	for i, r := range replicas {
		if b, err := os.ReadFile(r.logPath); err == nil {
			logs[i] = string(b)
		}
	}
	match := func(words []string) (lines, requests []string) {
		for i, log := range logs {
			for line := range strings.Lines(log) {
				for _, w := range words {
					if w != "" && strings.Contains(line, w) {
						lines = append(lines, replicas[i].name+": "+strings.TrimSpace(line))
						for f := range strings.FieldsSeq(line) {
							if id, ok := strings.CutPrefix(f, "request="); ok && !slices.Contains(words, id) && !slices.Contains(requests, id) {
								requests = append(requests, id)
							}
						}
						break
					}
				}
			}
		}
		return lines, requests
	}
	lines, requests := match(words)
	if len(requests) > 0 {
		lines, _ = match(append(words, requests...))
	}
	return lines
}

// exited says whether the process has ended.
func (r *replica) exited() bool {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	select {
	case <-done:
		return true
	default:
		return false
	}
}

func (r *replica) tailLog(t *testing.T, lines int) {
	f, err := os.Open(r.logPath)
	if err != nil {
		return
	}
	defer f.Close()
	var all []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		all = append(all, sc.Text())
	}
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	t.Logf("%s log (last %d lines):\n%s", r.name, len(all), strings.Join(all, "\n"))
}

// apiToken is the replicas' BOBNET_API_TOKEN.
const apiToken = "soak-api-token-0123456789"

// call sends a JSON request; status 0 means the replica could not be
// reached or did not answer in time.
func (r *replica) call(ctx context.Context, method, path string, body any) (int, map[string]any) {
	var rd *bytes.Reader
	if body != nil {
		js, _ := json.Marshal(body)
		rd = bytes.NewReader(js)
	} else {
		rd = bytes.NewReader(nil)
	}
	ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, r.url+path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// post sends raw bytes with headers, as chat platforms and webhooks do.
func (r *replica) post(ctx context.Context, path string, h http.Header, body []byte) int {
	code, _ := postJSON(ctx, r, path, h, body)
	return code
}

func buildBobNet(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bobnet")
	c := exec.Command("go", "build", "-tags", "goolm", "-o", bin, "./cmd/bobnet")
	c.Dir = root
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal(fmt.Errorf("no go.mod above the test"))
		}
		dir = parent
	}
}

// postJSON is post for answers in JSON.
func postJSON(ctx context.Context, r *replica, path string, h http.Header, body []byte) (int, map[string]any) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", r.url+path, bytes.NewReader(body))
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}
