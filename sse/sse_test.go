package sse_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/sse"
)

type pumped struct {
	err  error
	took time.Duration
}

// server streams what events carries as "tick" events, reporting how each
// stream ended on ended.
func server(t *testing.T, s *sse.Streams, events chan int, ended chan pumped) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, ok := s.Open(w, r)
		if !ok {
			return
		}
		defer st.Close()
		start := time.Now()
		err := sse.Pump(r.Context(), st, events, func(n int) error {
			return st.Send(strings.Repeat("1", n%3+1), "tick", map[string]any{"n": n, "pad": strings.Repeat("x", 64<<10)})
		})
		ended <- pumped{err, time.Since(start)}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSendWritesEventsAndHeartbeats(t *testing.T) {
	t.Parallel()
	events, ended := make(chan int), make(chan pumped, 1)
	srv := server(t, sse.New(sse.Limits{Heartbeat: 20 * time.Millisecond}), events, ended)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("headers %v", resp.Header)
	}
	r := bufio.NewReader(resp.Body)
	if line, _ := r.ReadString('\n'); line != "retry: 2000\n" {
		t.Fatalf("first line %q", line)
	}
	beats := 0
	for beats < 2 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == ": keep-alive\n" {
			beats++
		}
	}
	events <- 4
	var got []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, ":") || line == "\n" && len(got) == 0 {
			continue
		}
		if line == "\n" {
			break
		}
		got = append(got, line[:min(len(line), 20)])
	}
	if len(got) != 3 || got[0] != "id: 11\n" || got[1] != "event: tick\n" || !strings.HasPrefix(got[2], `data: {"n":4,`) {
		t.Fatalf("event lines %q", got)
	}
}

// A caller that stops reading does not hold its stream forever: a write
// that cannot finish within WriteWait ends it.
func TestStalledReaderIsGivenUp(t *testing.T) {
	t.Parallel()
	events, ended := make(chan int), make(chan pumped, 1)
	srv := server(t, sse.New(sse.Limits{WriteWait: 200 * time.Millisecond}), events, ended)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// Never read: the socket buffers fill, then writes block.
	go func() {
		for i := 0; ; i++ {
			select {
			case events <- i:
			case <-time.After(10 * time.Second):
				return
			}
		}
	}()
	select {
	case p := <-ended:
		if p.err == nil {
			t.Fatalf("the stream ended without a write error after %v", p.took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a stream whose caller stopped reading is still open")
	}
}

// Closing the requests' base context (what bobnet serve does on shutdown)
// ends open streams at once.
func TestShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	events, ended := make(chan int), make(chan pumped, 1)
	s := sse.New(sse.Limits{})
	srv := httptest.NewUnstartedServer(nil)
	base, cancel := context.WithCancel(context.Background())
	srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	srv.Config.RegisterOnShutdown(cancel)
	inner := server(t, s, events, ended)
	srv.Config.Handler = inner.Config.Handler
	srv.Start()
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if s.Count() != 1 {
		t.Fatalf("open streams = %d", s.Count())
	}
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	start := time.Now()
	if err := srv.Config.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown waited for the stream: %v after %v", err, time.Since(start))
	}
	if p := <-ended; p.err != nil {
		t.Fatalf("stream ended with %v", p.err)
	}
	if s.Count() != 0 {
		t.Fatalf("open streams after shutdown = %d", s.Count())
	}
}

func TestCapsAnswer429And503(t *testing.T) {
	t.Parallel()
	events, ended := make(chan int), make(chan pumped, 10)
	srv := server(t, sse.New(sse.Limits{PerCaller: 1, Total: 2}), events, ended)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func(token string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"?access_token="+token, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for _, c := range []struct {
		token string
		want  int
	}{{"a", 200}, {"a", 429}, {"b", 200}, {"c", 503}} {
		resp := open(c.token)
		if resp.StatusCode != c.want {
			t.Fatalf("%s: %d, want %d", c.token, resp.StatusCode, c.want)
		}
		if c.want != 200 && resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s: %d without Retry-After", c.token, c.want)
		}
	}
}
