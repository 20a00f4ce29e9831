package systemtest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/store/storetest"
)

// redisServer runs a private redis-server on a fixed port, so the test can
// stop it and start it again where clients expect it.
type redisServer struct {
	port int
	dir  string
	cmd  *exec.Cmd
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (s *redisServer) start(t *testing.T) {
	t.Helper()
	s.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(s.port), "--dir", s.dir, "--save", "", "--appendonly", "no")
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("redis-server did not start")
}

func (s *redisServer) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

func TestRedisOutageAndRecovery(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not installed; `make test` installs it")
	}
	rs := &redisServer{port: freePort(t), dir: t.TempDir()}
	rs.start(t)
	t.Cleanup(rs.stop)
	a := start(t, withEnv(map[string]string{"REDIS_URL": fmt.Sprintf("redis://127.0.0.1:%d/0", rs.port)}))
	post := func() (int, string) {
		var out struct {
			Error     string
			RequestID string `json:"request_id"`
		}
		code := a.call(t, "POST", "/api/v1/channels/general/messages", map[string]string{"user": "alice", "text": "plan our newspaper"}, &out)
		return code, out.Error + out.RequestID
	}
	ready := func() int {
		resp, err := http.Get(a.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code, _ := post(); code != http.StatusAccepted || ready() != http.StatusOK {
		t.Fatalf("before the outage: post %d, ready %d", code, ready())
	}

	rs.stop()
	code, msg := post()
	if code != http.StatusServiceUnavailable || !strings.Contains(msg, "unavailable") {
		t.Fatalf("during the outage: %d %q", code, msg)
	}
	if ready() != http.StatusServiceUnavailable {
		t.Fatal("readyz passes while Redis is down")
	}

	rs.start(t) // same port: clients reconnect on their own
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, id := post()
		if code == http.StatusAccepted {
			if r := a.waitRequest(t, id); r.State != "done" || r.ProposalID == "" {
				t.Fatalf("after recovery: %+v", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery: %d %q", code, id)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ready() != http.StatusOK {
		t.Fatal("readyz still failing after recovery")
	}
}

// tcpProxy forwards a port to Postgres and can cut every connection and
// refuse new ones, then come back on the same port: Postgres "going away".
type tcpProxy struct {
	t      *testing.T
	addr   string
	target string
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	p := &tcpProxy{t: t, target: target, addr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	p.restore()
	t.Cleanup(p.cut)
	return p
}

func (p *tcpProxy) restore() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func TestPostgresOutageAndRecovery(t *testing.T) {
	t.Parallel()
	dbURL, err := url.Parse(storetest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, dbURL.Host)
	dbURL.Host = proxy.addr
	a := start(t, withEnv(map[string]string{"DATABASE_URL": dbURL.String(), "BOBNET_RECLAIM_IDLE": "3s"}))
	submit := func() string {
		var out struct {
			RequestID string `json:"request_id"`
		}
		if code := a.call(t, "POST", "/api/v1/channels/general/messages", map[string]string{"user": "alice", "text": "plan our newspaper"}, &out); code != http.StatusAccepted {
			t.Fatalf("post: %d", code)
		}
		return out.RequestID
	}
	propose := func() requestJSON { return a.waitRequest(t, submit()) }
	first := propose()
	if first.State != "done" {
		t.Fatalf("before the outage: %+v", first)
	}

	proxy.cut()
	// Redis still takes the request; planning needs Postgres, so the
	// request waits (tried again after each reclaim) instead of failing:
	// it is answered once, when Postgres is back.
	waiting := submit()
	time.Sleep(4 * time.Second)
	var st requestJSON
	if code := a.call(t, "GET", "/api/v1/requests/"+waiting, nil, &st); code != http.StatusOK || st.State == "failed" || st.State == "done" {
		t.Fatalf("during the outage: %d %+v", code, st)
	}
	var out struct{ Error string }
	if code := a.call(t, "POST", "/api/v1/proposals/"+first.ProposalID+"/approve", map[string]string{"user": "alice"}, &out); code != http.StatusServiceUnavailable {
		t.Fatalf("approve during the outage: %d %q", code, out.Error)
	}
	resp, err := http.Get(a.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz during the outage: %d", resp.StatusCode)
	}

	proxy.restore()
	// The claim was given back: the same proposal approves now, once.
	deadline := time.Now().Add(15 * time.Second)
	for {
		var ok struct {
			BoardID string `json:"board_id"`
		}
		code := a.call(t, "POST", "/api/v1/proposals/"+first.ProposalID+"/approve", map[string]string{"user": "alice"}, &ok)
		if code == http.StatusOK && ok.BoardID != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery: %d", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := propose(); r.State != "done" {
		t.Fatalf("after recovery: %+v", r)
	}
	// The request made during the outage is answered now, with its plan.
	if r := a.waitRequest(t, waiting); r.State != "done" || r.ProposalID == "" {
		t.Fatalf("the request made during the outage: %+v", r)
	}
}
