package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/signing"
)

// call sends a JSON request and decodes the JSON answer into out.
func (a *testApp) call(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		js, _ := json.Marshal(b)
		rd = bytes.NewReader(js)
	}
	req, _ := http.NewRequest(method, a.URL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := contractClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: content type %q", method, path, ct)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

type requestJSON struct {
	ID         string `json:"id"`
	State      string `json:"state"`
	ProposalID string `json:"proposal_id"`
	Error      string `json:"error"`
	Reply      *struct{ Kind, Text string }
}

func (a *testApp) waitRequest(t *testing.T, id string) requestJSON {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var r requestJSON
		switch code := a.call(t, "GET", "/api/v1/requests/"+id, nil, &r); code {
		case http.StatusOK:
		case http.StatusServiceUnavailable:
			// Redis coming back (the outage tests): ask again.
			time.Sleep(25 * time.Millisecond)
			continue
		default:
			t.Fatalf("GET request: %d", code)
		}
		if r.State == "done" || r.State == "failed" {
			return r
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("request %s not done", id)
	return requestJSON{}
}

type sseEvent struct {
	ID, Type string
	Data     json.RawMessage
}

// events reads a channel's event stream into a channel of events.
func (a *testApp) events(t *testing.T, channel string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", a.URL+"/api/v1/channels/"+channel+"/events", nil)
	resp, err := contractClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 100)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				var wrapper struct{ Data json.RawMessage }
				_ = json.Unmarshal([]byte(line[6:]), &wrapper)
				ev.Data = wrapper.Data
			case line == "" && ev.Type != "":
				out <- ev
				ev = sseEvent{}
			}
		}
	}()
	return out
}

func TestAPIEndToEnd(t *testing.T) {
	t.Parallel()
	a := start(t)
	events := a.events(t, "general")

	var accepted struct {
		RequestID string `json:"request_id"`
	}
	if code := a.call(t, "POST", "/api/v1/channels/general/messages", map[string]string{"user": "alice", "text": "plan our daily research newspaper"}, &accepted); code != http.StatusAccepted || accepted.RequestID == "" {
		t.Fatalf("post message: %d %+v", code, accepted)
	}
	r := a.waitRequest(t, accepted.RequestID)
	if r.State != "done" || r.ProposalID == "" {
		t.Fatalf("request = %+v", r)
	}
	var p struct {
		ID, State   string
		RequestedBy string    `json:"requested_by"`
		ExpiresAt   time.Time `json:"expires_at"`
		Plan        struct {
			Actions []struct {
				Cards []struct{ Title string }
				Links []struct{ Card string }
			}
		}
		Warnings []any
	}
	if code := a.call(t, "GET", "/api/v1/proposals/"+r.ProposalID, nil, &p); code != http.StatusOK {
		t.Fatalf("get proposal: %d", code)
	}
	if p.State != "pending" || p.RequestedBy != "alice" || len(p.Plan.Actions[0].Cards) != 10 || len(p.Plan.Actions[0].Links) != 13 || p.ExpiresAt.Before(time.Now().Add(23*time.Hour)) || p.Warnings == nil {
		t.Fatalf("proposal = %+v", p)
	}

	// 100 people press Approve at once (alice 100 times over): one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	var boardID, boardURL string
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out struct {
				BoardID  string `json:"board_id"`
				BoardURL string `json:"board_url"`
				Error    string
				State    string
			}
			code := a.call(t, "POST", "/api/v1/proposals/"+r.ProposalID+"/approve", map[string]string{"user": "alice"}, &out)
			mu.Lock()
			defer mu.Unlock()
			codes[code]++
			if code == http.StatusOK {
				boardID, boardURL = out.BoardID, out.BoardURL
			} else if out.Error == "" {
				t.Errorf("%d without an error message", code)
			}
		}()
	}
	wg.Wait()
	if codes[http.StatusOK] != 1 || codes[http.StatusConflict] != 99 {
		t.Fatalf("status codes = %v", codes)
	}
	if boardURL != a.URL+"/boards/"+boardID {
		t.Errorf("board url = %s", boardURL)
	}
	var late struct {
		Error, State string
		BoardID      string `json:"board_id"`
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+r.ProposalID+"/cancel", map[string]string{"user": "alice"}, &late); code != http.StatusConflict || late.State != "approved" || late.BoardID != boardID {
		t.Fatalf("cancel after approve: %d %+v", code, late)
	}
	var b struct {
		Board struct{ ID, Name string }
		Cards []struct {
			DependsOn []string `json:"depends_on"`
		}
	}
	if code := a.call(t, "GET", "/api/v1/boards/"+boardID, nil, &b); code != http.StatusOK || len(b.Cards) != 10 {
		t.Fatalf("board: %d %+v", code, b)
	}
	links := 0
	for _, c := range b.Cards {
		links += len(c.DependsOn)
	}
	if links != 13 {
		t.Errorf("links = %d", links)
	}
	// The page chat links to is there.
	resp, err := http.Get(boardURL)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("board page: %v %v", resp, err)
	}
	resp.Body.Close()

	// The event stream told the console everything, ending with the link.
	var seen []string
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type == "draft" {
				// The plan as the model streamed it, before its preview.
				if slices.Contains(seen, "proposal") {
					t.Errorf("a draft after the preview: %v", seen)
				}
				continue
			}
			seen = append(seen, ev.Type)
			if ev.Type == "reply" && strings.Contains(string(ev.Data), boardURL) {
				got := strings.Join(seen, ",")
				if !strings.HasPrefix(got, "message,working,proposal,proposal_updated") {
					t.Errorf("events = %s", got)
				}
				return
			}
		case <-deadline:
			t.Fatalf("no reply with the board link; events %v", seen)
		}
	}
}

func TestAPIRejectsBadInput(t *testing.T) {
	t.Parallel()
	a := start(t, withEnv(map[string]string{"BOBNET_ADMINS": "root"}))
	var accepted struct {
		RequestID string `json:"request_id"`
	}
	a.call(t, "POST", "/api/v1/channels/ops/messages", map[string]string{"user": "alice", "text": "plan it"}, &accepted)
	r := a.waitRequest(t, accepted.RequestID)
	pid := r.ProposalID
	tests := []struct {
		name, method, path string
		body               any
		want               int
		contains           string
	}{
		{"bad json", "POST", "/api/v1/channels/ops/messages", `{"user":`, 400, "invalid JSON"},
		{"unknown field", "POST", "/api/v1/channels/ops/messages", `{"user":"a","text":"t","admin":true}`, 400, "unknown field"},
		{"two values", "POST", "/api/v1/channels/ops/messages", `{"user":"a","text":"t"} {}`, 400, "more than one"},
		{"too big", "POST", "/api/v1/channels/ops/messages", `{"user":"a","text":"` + strings.Repeat("x", 70000) + `"}`, 413, "larger than"},
		{"no user", "POST", "/api/v1/channels/ops/messages", map[string]string{"text": "hi"}, 400, `"user" is required`},
		{"blank text", "POST", "/api/v1/channels/ops/messages", map[string]string{"user": "a", "text": "  "}, 400, `"text" is required`},
		{"bad channel", "POST", "/api/v1/channels/Bad%20Channel/messages", map[string]string{"user": "a", "text": "hi"}, 400, "channel names"},
		{"unknown request", "GET", "/api/v1/requests/r_nope", nil, 404, "not found"},
		{"unknown proposal", "GET", "/api/v1/proposals/p_nope", nil, 404, "not found"},
		{"approve unknown", "POST", "/api/v1/proposals/p_nope/approve", map[string]string{"user": "alice"}, 404, "not found"},
		{"stranger approves", "POST", "/api/v1/proposals/" + pid + "/approve", map[string]string{"user": "mallory"}, 403, "not allowed"},
		{"stranger cancels", "POST", "/api/v1/proposals/" + pid + "/cancel", map[string]string{"user": "mallory"}, 403, "not allowed"},
		{"revise without feedback", "POST", "/api/v1/proposals/" + pid + "/revise", map[string]string{"user": "alice"}, 400, "feedback"},
		{"approve without user", "POST", "/api/v1/proposals/" + pid + "/approve", map[string]string{}, 400, `"user" is required`},
		{"propose pending again", "POST", "/api/v1/proposals/" + pid + "/propose-again", map[string]string{"user": "alice"}, 409, "already pending"},
	}
	for _, tt := range tests {
		var out struct{ Error string }
		code := a.call(t, tt.method, tt.path, tt.body, &out)
		if code != tt.want || !strings.Contains(out.Error, tt.contains) {
			t.Errorf("%s: %d %q, want %d containing %q", tt.name, code, out.Error, tt.want, tt.contains)
		}
	}
	// Nothing above changed the proposal; the requester's admin may still approve.
	var ok struct {
		BoardID string `json:"board_id"`
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+pid+"/approve", map[string]string{"user": "root"}, &ok); code != 200 || ok.BoardID == "" {
		t.Fatalf("admin approve: %d", code)
	}
}

func TestAPIToken(t *testing.T) {
	t.Parallel()
	a := start(t, withEnv(map[string]string{"BOBNET_API_TOKEN": "tok-123"}))
	var out struct{ Error string }
	a.token = ""
	if code := a.call(t, "GET", "/api/v1/requests/r1", nil, &out); code != http.StatusUnauthorized || !strings.Contains(out.Error, "BOBNET_API_TOKEN") {
		t.Fatalf("no token: %d %q", code, out.Error)
	}
	a.token = "tok-123"
	if code := a.call(t, "GET", "/api/v1/requests/r1", nil, &out); code != http.StatusNotFound {
		t.Fatalf("with token: %d", code)
	}
	// The console page itself and the health checks stay reachable.
	for _, path := range []string{"/", "/healthz", "/readyz", "/static/app.js"} {
		resp, err := http.Get(a.URL + path)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %v", path, resp.StatusCode, err)
		}
		resp.Body.Close()
	}
}

func TestModelUnreachableNamesTheSetting(t *testing.T) {
	t.Parallel()
	a := start(t, withEnv(map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}))
	var accepted struct {
		RequestID string `json:"request_id"`
	}
	a.call(t, "POST", "/api/v1/channels/general/messages", map[string]string{"user": "alice", "text": "plan it"}, &accepted)
	r := a.waitRequest(t, accepted.RequestID)
	if r.State != "failed" || r.Reply == nil || !strings.Contains(r.Reply.Text, "OPENAI_BASE_URL") {
		t.Fatalf("request = %+v", r)
	}
	// The person is told what to do; the model server's address and the
	// dial error are for the operator's log only.
	for _, internal := range []string{"127.0.0.1", "/v1", "dial tcp", "connection refused"} {
		if strings.Contains(r.Reply.Text, internal) || strings.Contains(r.Error, internal) {
			t.Errorf("user-facing text shows %q: %q / %q", internal, r.Reply.Text, r.Error)
		}
	}
}

func TestSlackIsServedWhenConfigured(t *testing.T) {
	t.Parallel()
	a := start(t, withEnv(map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "shh", "SLACK_API_URL": "http://127.0.0.1:1/api/"}))
	body := `{"type":"url_verification","challenge":"c-42"}`
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	send := func(sig string) (int, string) {
		req, _ := http.NewRequest("POST", a.URL+"/slack/events", strings.NewReader(body))
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, got := send(signing.SlackSignature("shh", ts, []byte(body))); code != http.StatusOK || got != "c-42" {
		t.Fatalf("signed: %d %q", code, got)
	}
	if code, _ := send("v0=00"); code != http.StatusUnauthorized {
		t.Fatalf("unsigned: %d", code)
	}
}
