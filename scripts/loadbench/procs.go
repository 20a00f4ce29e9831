package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// proc is a process the harness started: BobNet or a bare implementation.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan error
	log  string
}

// startProc starts path with args and env (added to the harness's own),
// its output into logPath.
func startProc(name, path string, args, env []string, logPath string) (*proc, error) {
	out, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s: log: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan error, 1), log: logPath}
	go func() {
		p.done <- cmd.Wait()
		out.Close()
	}()
	return p, nil
}

// waitReady waits until GET url answers 200, failing early when the
// process exits.
func (p *proc) waitReady(url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			p.done <- err
			log, _ := os.ReadFile(p.log)
			return fmt.Errorf("%s exited before it was ready (%v): %s", p.name, err, tail(string(log), 2000))
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s: not ready at %s within %s (log: %s)", p.name, url, timeout, p.log)
}

// stop asks the process to stop (SIGTERM) and kills it after 20 s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// freeAddr is a loopback address with a port free just now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// redisMode is how REDIS_URL is read: "single" (one server, the default)
// or "cluster" (redis.ParseClusterURL: a seed address and addr= for
// more), as LOADBENCH_REDIS_MODE says. BobNet is handed REDIS_URL and
// its own BOBNET_REDIS_* settings unchanged.
func newRedis(url, mode string, poolSize int) (redis.UniversalClient, error) {
	switch mode {
	case "", "single":
		o, err := redis.ParseURL(url)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		o.PoolSize = poolSize
		return redis.NewClient(o), nil
	case "cluster":
		o, err := redis.ParseClusterURL(url)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL (cluster): %w", err)
		}
		o.PoolSize = poolSize
		return redis.NewClusterClient(o), nil
	}
	return nil, fmt.Errorf("LOADBENCH_REDIS_MODE: %q is neither single nor cluster", mode)
}

// pingRedis checks that rdb answers.
func pingRedis(ctx context.Context, rdb redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("REDIS_URL: cannot reach Redis: %w", err)
	}
	return nil
}
