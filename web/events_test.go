package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/sse"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
	"github.com/bobnet/bobnet/web"
	"github.com/bobnet/bobnet/web/webtest"
)

// liveServer serves a store's boards with live changes, behind a server
// whose read and write timeouts are short, counting streams against
// limits.
func liveServer(t *testing.T, s *store.Store, limits sse.Limits, timeout time.Duration) *httptest.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	feed := store.NewFeed(s, storetest.Logger(t))
	done := make(chan struct{})
	go func() { defer close(done); _ = feed.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-feed.Ready()
	w := web.New(s, feed, sse.New(limits), storetest.Logger(t))
	r := chi.NewRouter()
	w.PageRoutes(r)
	httpapi.NewBoards(s, w.Events, storetest.Logger(t)).Routes(r)
	srv := httptest.NewUnstartedServer(r)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = timeout, timeout
	// As bobnet serve does: closing ends the streams, which would
	// otherwise hold Close until their browsers go.
	base, endStreams := context.WithCancel(context.Background())
	srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	srv.Start()
	t.Cleanup(func() { endStreams(); srv.Close() })
	return srv
}

func openStream(t *testing.T, ctx context.Context, url, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// A board stream outlives the server's read and write timeouts: a change
// made well after both arrives on the stream opened before, with
// heartbeats in between. Before, the write timeout cut every stream, so
// every viewer reconnected and reloaded the board each minute.
func TestBoardStreamOutlivesServerTimeouts(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	id, cards := newspaperBoard(t, s, "console:stream-timeouts")
	const timeout = 300 * time.Millisecond
	srv := liveServer(t, s, sse.Limits{Heartbeat: 100 * time.Millisecond}, timeout)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, path := range []string{"/boards/" + string(id) + "/events", "/api/v1/boards/" + string(id) + "/events"} {
		resp := openStream(t, ctx, srv.URL+path, "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		time.Sleep(4 * timeout)
		status := []string{"In Progress", "Review"}[i]
		if _, err := s.ChangeCard(ctx, board.CardChange{Card: cards["topic_policy"].ID, Actor: "carol", Via: "page", Status: ptr(status)}); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		beats, event := 0, ""
		for event == "" && sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, ":") {
				beats++
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var ev board.CardEvent
				if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Card.Status != status {
					t.Fatalf("%s: event %s (%v)", path, data, err)
				}
				event = data
			}
		}
		if event == "" {
			t.Fatalf("%s: the stream ended before the change made %v after it opened (server timeouts %v): %v", path, 4*timeout, timeout, sc.Err())
		}
		if beats < 2 {
			t.Errorf("%s: %d heartbeats in %v, want at least 2", path, beats, 4*timeout)
		}
	}
}

// Board streams are capped per caller (429) and in all (503), both with
// Retry-After; a closed stream gives its place back.
func TestBoardStreamsAreCapped(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	id, _ := newspaperBoard(t, s, "console:stream-caps")
	srv := liveServer(t, s, sse.Limits{PerCaller: 2, Total: 3}, time.Minute)
	url := srv.URL + "/api/v1/boards/" + string(id) + "/events"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := func(token string, status int) *http.Response {
		t.Helper()
		resp := openStream(t, ctx, url, token)
		if resp.StatusCode != status {
			t.Fatalf("stream of %s: %d, want %d", token, resp.StatusCode, status)
		}
		if status != http.StatusOK && (resp.Header.Get("Retry-After") == "" || resp.Header.Get("Content-Type") != "application/json") {
			t.Fatalf("stream of %s refused with %d without Retry-After or JSON: %v", token, status, resp.Header)
		}
		return resp
	}
	first := want("alice", http.StatusOK)
	want("alice", http.StatusOK)
	want("alice", http.StatusTooManyRequests)
	want("bob", http.StatusOK)
	want("carol", http.StatusServiceUnavailable)
	first.Body.Close()
	// Its place comes back once the server sees it gone.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := openStream(t, ctx, url, "carol")
		if resp.StatusCode == http.StatusOK {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's place never came back: %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A board page whose stream is refused (the server's caps) tries again
// later, which a browser does not do by itself after a 503, and goes live
// once a place is free.
func TestBoardPageRetriesARefusedStream(t *testing.T) {
	t.Parallel()
	browser := webtest.Browser(t)
	s := storetest.NewStore(t)
	id, _ := newspaperBoard(t, s, "console:stream-retry")
	srv := liveServer(t, s, sse.Limits{Total: 1}, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hold := openStream(t, ctx, srv.URL+"/boards/"+string(id)+"/events", "")
	if hold.StatusCode != http.StatusOK {
		t.Fatalf("first stream: %d", hold.StatusCode)
	}
	if err := chromedp.Do(browser, chromedp.Navigate(srv.URL+"/boards/"+string(id)), chromedp.WaitVisible(chromedp.CSS("#board-name"))); err != nil {
		t.Fatal(err)
	}
	live := func(want string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			got := run(t, browser, chromedp.Evaluate[string](`document.body.dataset.live || ''`))
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the page's stream is %q after %v, want %q", got, within, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	live("reconnecting", 10*time.Second)
	hold.Body.Close()
	live("yes", 20*time.Second)
}
