package systemtest

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bobnet/bobnet/app"
	"github.com/bobnet/bobnet/signing"
)

// slowSlack is a Slack Web API that takes delay over every call and keeps
// what was sent, by method.
type slowSlack struct {
	srv   *httptest.Server
	delay atomic.Int64 // nanoseconds
	ts    atomic.Int64
	mu    sync.Mutex
	calls []slackCall
}

type slackCall struct {
	Method string
	Form   url.Values
	TS     string // the ts answered
}

func newSlowSlack(t *testing.T) *slowSlack {
	s := &slowSlack{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		time.Sleep(time.Duration(s.delay.Load()))
		ts := "1700000000." + strconv.FormatInt(100000+s.ts.Add(1), 10)
		s.mu.Lock()
		s.calls = append(s.calls, slackCall{Method: strings.TrimPrefix(r.URL.Path, "/api/"), Form: r.PostForm, TS: ts})
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": "C_NEWS", "ts": ts})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *slowSlack) sent(method string) []slackCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []slackCall
	for _, c := range s.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// syncBuffer is a log written by several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// signedHeader is the header of body signed as Slack signs it, and body.
func signedHeader(contentType, body string) (http.Header, string) {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	return http.Header{"Content-Type": {contentType}, "X-Slack-Request-Timestamp": {ts}, "X-Slack-Signature": {signing.SlackSignature("shh", ts, []byte(body))}}, body
}

// postSigned posts a request signed as Slack signs it and returns the
// status.
func postSigned(t *testing.T, url, contentType, body string) int {
	t.Helper()
	h, body := signedHeader(contentType, body)
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// slowPost is a request whose body is sent in two halves, the second when
// the test says.
type slowPost struct {
	url  string
	pw   *io.PipeWriter
	rest string
	code chan int
}

// startSlowPost sends the headers and the first half of body.
func startSlowPost(t *testing.T, url string, h http.Header, body string) *slowPost {
	t.Helper()
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", url, pr)
	req.Header, req.ContentLength = h, int64(len(body))
	p := &slowPost{url: url, pw: pw, rest: body[len(body)/2:], code: make(chan int, 1)}
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			p.code <- -1
			return
		}
		resp.Body.Close()
		p.code <- resp.StatusCode
	}()
	if _, err := io.WriteString(pw, body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}
	return p
}

// finish sends the rest of the body and returns the answer's status.
func (p *slowPost) finish(t *testing.T) int {
	t.Helper()
	if _, err := io.WriteString(p.pw, p.rest); err != nil {
		t.Fatalf("%s: %v", p.url, err)
	}
	_ = p.pw.Close()
	select {
	case c := <-p.code:
		return c
	case <-time.After(30 * time.Second):
		return 0
	}
}

var approveValue = regexp.MustCompile(`"action_id":"bobnet_approve"[^}]*"value":"(p_[a-z0-9]+)"|"value":"(p_[a-z0-9]+)"[^}]*"action_id":"bobnet_approve"`)

// TestShutdownPostsDecisionsInFlight stops BobNet (SIGTERM: its serve
// context ends) while four approvals are arriving, with Slack slow to
// answer. Every approval is answered and its preview redraw and "Approved
// by" reply are still posted before BobNet exits, in order behind the slow
// posts, and nothing is logged as dropped. Before, the engine stopped with
// the signal while HTTP was still draining: these were dropped, logged as
// "the channel's outbound queue is full".
func TestShutdownPostsDecisionsInFlight(t *testing.T) {
	t.Parallel()
	sink := newSlowSlack(t)
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a := start(t, withEnv(map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "shh", "SLACK_API_URL": sink.srv.URL + "/api/",
		"BOBNET_MODEL_STREAM": "off", // not about drafts: previews posted as messages
	}), withLogger(func(app.Config) *slog.Logger { return logger }))

	const n = 4
	for i := range n {
		ts := "1700000100.00000" + strconv.Itoa(i)
		event, _ := json.Marshal(map[string]any{
			"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": "EvStop" + strconv.Itoa(i), "event_time": 1700000100,
			"event": map[string]any{"type": "app_mention", "user": "U_ALICE", "text": "<@UBOBNET> plan our daily research newspaper", "ts": ts, "channel": "C_NEWS", "event_ts": ts},
		})
		if code := postSigned(t, a.URL+"/slack/events", "application/json", string(event)); code != http.StatusOK {
			t.Fatalf("mention %d: %d", i, code)
		}
	}
	ids := map[string]bool{}
	previews := map[string]string{} // preview message ts -> proposal
	deadline := time.Now().Add(30 * time.Second)
	for len(ids) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d previews posted, want %d", len(ids), n)
		}
		time.Sleep(50 * time.Millisecond)
		for _, c := range sink.sent("chat.postMessage") {
			for _, m := range approveValue.FindAllStringSubmatch(c.Form.Get("blocks"), -1) {
				ids[m[1]+m[2]] = true
				previews[c.TS] = m[1] + m[2]
			}
		}
	}

	// Slack turns slow. Four approvals are on their way in, two clicks
	// in Slack and two through the REST API, their bodies half sent when
	// BobNet is told to stop, the rest a moment later: decisions in flight.
	sink.delay.Store(int64(500 * time.Millisecond))
	var posts []*slowPost
	k := 0
	for id := range ids {
		if k++; k%2 == 0 {
			payload, _ := json.Marshal(map[string]any{
				"type": "block_actions", "trigger_id": "T-" + id, "user": map[string]any{"id": "U_ALICE"},
				"channel": map[string]any{"id": "C_NEWS"},
				"actions": []map[string]any{{"action_id": "bobnet_approve", "block_id": "bobnet_decision:" + id, "type": "button", "value": id, "action_ts": "1"}},
			})
			h, body := signedHeader("application/x-www-form-urlencoded", "payload="+url.QueryEscape(string(payload)))
			posts = append(posts, startSlowPost(t, a.URL+"/slack/interactivity", h, body))
			continue
		}
		h := http.Header{"Content-Type": {"application/json"}}
		posts = append(posts, startSlowPost(t, a.URL+"/api/v1/proposals/"+id+"/approve", h, `{"user":"U_ALICE"}`))
	}
	// A console viewer holds an event stream open.
	resp, err := http.Get(a.URL + "/api/v1/channels/general/events")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("event stream: %v %v", err, resp)
	}
	streamEnded := make(chan struct{})
	go func() { defer close(streamEnded); _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
	time.Sleep(300 * time.Millisecond) // the requests are being read
	stopped := make(chan error, 1)
	begin := time.Now()
	go func() { stopped <- a.stop() }()
	time.Sleep(1500 * time.Millisecond)
	for _, p := range posts {
		if code := p.finish(t); code != http.StatusOK {
			t.Errorf("%s: %d", p.url, code)
		}
	}
	if err := <-stopped; err != nil {
		t.Fatalf("serve: %v", err)
	}
	// The stream ended with the drain instead of holding it to its end.
	select {
	case <-streamEnded:
	default:
		t.Error("the event stream is still open after serve returned")
	}
	if took := time.Since(begin); took >= app.DrainHTTPFor {
		t.Errorf("the shutdown took %v: something held the HTTP drain to its %v limit", took, app.DrainHTTPFor)
	}

	approved := map[string]bool{}
	for _, c := range sink.sent("chat.postMessage") {
		if text := c.Form.Get("text"); strings.Contains(text, "Approved by") {
			for id := range ids {
				if strings.Contains(text, id) {
					approved[id] = true
				}
			}
		}
	}
	redrawn := map[string]bool{}
	for _, c := range sink.sent("chat.update") {
		if id, ok := previews[c.Form.Get("ts")]; ok && strings.Contains(c.Form.Get("text"), "approved") {
			redrawn[id] = true
		}
	}
	if len(approved) != n || len(redrawn) != n {
		t.Errorf("after the shutdown, %d of %d approvals were announced and %d of %d previews redrawn", len(approved), n, len(redrawn), n)
	}
	for _, bad := range []string{"queue is full", "dropped", "not posted", "still running at shutdown"} {
		if strings.Contains(logs.String(), bad) {
			t.Errorf("the log says %q:\n%s", bad, logs.String())
		}
	}
}
