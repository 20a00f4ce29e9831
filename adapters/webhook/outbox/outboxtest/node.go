// Package outboxtest starts callback receivers for tests: one written in
// Node that checks every delivery with the official standardwebhooks npm
// package, pinned in testdata/receiver's package-lock.json, so BobNet's
// signatures are checked by the library receivers actually use rather
// than by BobNet's own code.
package outboxtest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Delivery is what the Node receiver made of one request.
type Delivery struct {
	ID    string `json:"id"`
	Path  string `json:"path"`
	OK    bool   `json:"ok"`
	Type  string `json:"type"`
	Body  string `json:"body"`
	Error string `json:"error"`
}

// NodeReceiver is a running receiver.js.
type NodeReceiver struct {
	// URL is where it listens, on 127.0.0.1.
	URL string

	mu   sync.Mutex
	got  []Delivery
	more chan struct{}
}

// receiverDir is testdata/receiver beside this package.
func receiverDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "receiver")
}

// install runs npm ci in the receiver's folder unless the packages of the
// committed lock file are already there. A file lock keeps two test
// processes (go test runs packages in parallel) from installing at once.
func install(dir string) error {
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	f, err := os.OpenFile(filepath.Join(dir, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }()
	stamp := filepath.Join(dir, "node_modules", ".bobnet-lock-sha256")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		return nil
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %w\n%s", dir, err, out)
	}
	return os.WriteFile(stamp, []byte(want), 0o644)
}

var installed struct {
	once sync.Once
	err  error
}

// StartNode installs (once per test process) and starts receiver.js with
// secret, and stops it when the test ends. The test is skipped only when
// node or npm is not installed.
func StartNode(t testing.TB, secret string) *NodeReceiver {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed; make test needs it for the Standard Webhooks receiver", tool)
		}
	}
	dir := receiverDir()
	installed.once.Do(func() { installed.err = install(dir) })
	if installed.err != nil {
		t.Fatal(installed.err)
	}
	cmd := exec.Command("node", "receiver.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CALLBACK_SECRET="+secret)
	cmd.Stderr = &testWriter{t: t}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	r := &NodeReceiver{more: make(chan struct{}, 1)}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	if !lines.Scan() {
		t.Fatalf("receiver.js said nothing: %v", lines.Err())
	}
	var hello struct{ Listening int }
	if err := json.Unmarshal(lines.Bytes(), &hello); err != nil || hello.Listening == 0 {
		t.Fatalf("receiver.js said %q", lines.Text())
	}
	r.URL = fmt.Sprintf("http://127.0.0.1:%d", hello.Listening)
	go func() {
		for lines.Scan() {
			var d Delivery
			if err := json.Unmarshal(lines.Bytes(), &d); err != nil {
				t.Errorf("receiver.js said %q", lines.Text())
				continue
			}
			r.mu.Lock()
			r.got = append(r.got, d)
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
		}
	}()
	return r
}

// Deliveries returns what arrived so far.
func (r *NodeReceiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.got...)
}

// ErrTimeout is what WaitFor returns when n deliveries did not arrive.
var ErrTimeout = errors.New("deliveries did not arrive in time")

// WaitFor waits up to d until n deliveries have arrived and returns them.
func (r *NodeReceiver) WaitFor(n int, d time.Duration) ([]Delivery, error) {
	deadline := time.After(d)
	for {
		if got := r.Deliveries(); len(got) >= n {
			return got, nil
		}
		select {
		case <-r.more:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			return r.Deliveries(), ErrTimeout
		}
	}
}

// testWriter logs the receiver's stderr into the test.
type testWriter struct{ t testing.TB }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("receiver.js: %s", p)
	return len(p), nil
}

var _ io.Writer = (*testWriter)(nil)
