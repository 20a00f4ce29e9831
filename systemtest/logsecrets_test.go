package systemtest

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/app"
	"github.com/bobnet/bobnet/signing"
	"github.com/bobnet/bobnet/store/storetest"
)

// lockedBuffer is a log destination written by many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// aboutIDs matches a log message about a request, a proposal or a board.
var aboutIDs = regexp.MustCompile(`(?i)request|proposal|preview|approval|board`)

// notAboutOne are messages that match aboutIDs without being about one
// known request, proposal or board: HTTP requests (the path names any
// id), work on the whole queue, and lookups of the id itself.
var notAboutOne = map[string]bool{
	"http request":                      true,
	"slack request refused":             true,
	"request queue not ready; retrying": true,
	"read request queue":                true,
	"renew request leases":              true,
	"find expired proposals":            true,
	"the model server does not answer yet; requests get a friendly error until it does": true,
	"matrix: find thread proposal": true,
	"matrix: find preview":         true,
}

// checkLogNamesIDs checks that every JSON record of log whose message is
// about a request, proposal or board carries its id in the attribute
// request, proposal or board, and that the run logged such records (at
// debug level it does: each answered request, posted preview and
// approval; and the failed redraw of a preview), so the check checks
// something.
func checkLogNamesIDs(t *testing.T, log string) {
	t.Helper()
	found := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue // reported as not JSON
		}
		msg, _ := rec["msg"].(string)
		if !aboutIDs.MatchString(msg) || notAboutOne[msg] {
			continue
		}
		found[msg] = true
		named := false
		for _, key := range []string{"request", "proposal", "board"} {
			if id, _ := rec[key].(string); id != "" {
				named = true
			}
		}
		if !named {
			t.Errorf("a log record about a request, proposal or board names none of them: %s", line)
		}
	}
	for _, want := range []string{"request answered", "preview posted", "proposal approved", "announce approval"} {
		if !found[want] {
			t.Errorf("the log has no %q record to check", want)
		}
	}
}

// slackStandIn answers Slack's Web API calls with ok, but for chat.update,
// which fails (so redrawing a preview logs a warning), and remembers the
// methods called and the last preview posted.
type slackStandIn struct {
	mu      sync.Mutex
	methods []string
	ts      int
	// preview is the proposal id and message ts of the last preview.
	preview, previewTS string
}

var previewValue = regexp.MustCompile(`"value":"(p_[a-z2-7]+)"`)

func (s *slackStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	s.mu.Lock()
	s.ts++
	ts := "1700000000." + strconv.Itoa(100000+s.ts)
	s.methods = append(s.methods, method)
	if m := previewValue.FindStringSubmatch(r.Form.Get("blocks")); m != nil && method == "chat.postMessage" {
		s.preview, s.previewTS = m[1], ts
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if method == "chat.update" {
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "message_not_found"})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": "C_LOG", "ts": ts, "message_ts": ts})
}

func (s *slackStandIn) lastPreview() (id, ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.preview, s.previewTS
}

func (s *slackStandIn) called(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.methods {
		if m == method {
			n++
		}
	}
	return n
}

// TestLogOfAFullRunHoldsNoSecret runs BobNet at debug level with every
// secret set — through the REST API and through Slack, with a good and a
// forged signature and a wrong API token — and searches the whole log for
// each secret, each signature sent and each bearer token.
func TestLogOfAFullRunHoldsNoSecret(t *testing.T) {
	t.Parallel()
	standIn := &slackStandIn{}
	slackAPI := httptest.NewServer(standIn)
	t.Cleanup(slackAPI.Close)
	// Postgres trusts local connections, so a password in the URL is
	// accepted and must still never reach the log.
	dbURL, err := url.Parse(storetest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	dbURL.User = url.UserPassword(dbURL.User.Username(), "db-password-0f9e")
	secrets := map[string]string{
		"BOBNET_API_TOKEN":     "api-token-1a2b3c4d",
		"OPENAI_API_KEY":       "sk-model-key-5e6f",
		"SLACK_BOT_TOKEN":      "xoxb-bot-token-7a8b",
		"SLACK_SIGNING_SECRET": "signing-secret-9c0d",
		"BOBNET_HOOK_SECRETS":  "github=hook-secret-1e2f",
	}
	env := map[string]string{
		"DATABASE_URL":  dbURL.String(),
		"SLACK_API_URL": slackAPI.URL + "/api/",
		// Not about drafts: the preview is posted as a message.
		"BOBNET_MODEL_STREAM": "off",
		"BOBNET_LOG_FORMAT":   "json",
		"BOBNET_LOG_LEVEL":    "debug",
	}
	for k, v := range secrets {
		env[k] = v
	}
	var log lockedBuffer
	a := start(t, withEnv(env), withLogger(func(cfg app.Config) *slog.Logger { return app.NewLogger(&log, cfg) }))

	// The REST API: a wrong token, then the whole flow with the right one.
	a.token = "wrong-token-3a4b"
	if code := a.call(t, "GET", "/api/v1/requests/r_x", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", code)
	}
	a.token = secrets["BOBNET_API_TOKEN"]
	// The event stream takes its token in the query, where browsers can
	// put it.
	resp, err := http.Get(a.URL + "/api/v1/channels/logs/events?access_token=" + a.token)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("event stream: %v %v", resp, err)
	}
	resp.Body.Close()
	var accepted struct {
		RequestID string `json:"request_id"`
	}
	a.call(t, "POST", "/api/v1/channels/logs/messages", map[string]string{"user": "alice", "text": "plan our daily research newspaper"}, &accepted)
	r := a.waitRequest(t, accepted.RequestID)
	if r.ProposalID == "" {
		t.Fatalf("request = %+v", r)
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+r.ProposalID+"/approve", map[string]string{"user": "alice"}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}

	// Slack: a mention with a good signature, one forged, then approve.
	var signatures []string
	postSlack := func(path, contentType, body, secret string) int {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		sig := signing.SlackSignature(secret, ts, []byte(body))
		signatures = append(signatures, strings.TrimPrefix(sig, "v0="))
		req, _ := http.NewRequest("POST", a.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	event, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": "EvLog1", "event_time": 1700000000,
		"event": map[string]any{"type": "app_mention", "user": "U_ALICE", "text": "<@UBOBNET> plan our newspaper", "ts": "1690000000.000001", "channel": "C_LOG", "event_ts": "1690000000.000001"},
	})
	if code := postSlack("/slack/events", "application/json", string(event), "forged-secret-5a6b"); code != http.StatusUnauthorized {
		t.Fatalf("forged event: %d", code)
	}
	if code := postSlack("/slack/events", "application/json", string(event), secrets["SLACK_SIGNING_SECRET"]); code != http.StatusOK {
		t.Fatalf("event: %d", code)
	}
	deadline := time.Now().Add(20 * time.Second)
	for standIn.called("chat.postMessage") == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if standIn.called("chat.postMessage") == 0 {
		t.Fatalf("no preview posted to Slack; log:\n%s", log.String())
	}
	// Approve it in Slack; redrawing the preview fails and is logged.
	pid, pts := standIn.lastPreview()
	if pid == "" {
		t.Fatalf("no preview among the Slack calls; log:\n%s", log.String())
	}
	click, _ := json.Marshal(map[string]any{
		"type": "block_actions", "trigger_id": "T-approve", "user": map[string]any{"id": "U_ALICE"},
		"channel":   map[string]any{"id": "C_LOG"},
		"container": map[string]any{"type": "message", "message_ts": pts, "channel_id": "C_LOG", "thread_ts": "1690000000.000001"},
		"message":   map[string]any{"ts": pts, "thread_ts": "1690000000.000001"},
		"actions":   []map[string]any{{"action_id": "bobnet_approve", "block_id": "bobnet_decision:" + pid, "type": "button", "value": pid, "action_ts": "1"}},
	})
	if code := postSlack("/slack/interactivity", "application/x-www-form-urlencoded", "payload="+url.QueryEscape(string(click)), secrets["SLACK_SIGNING_SECRET"]); code != http.StatusOK {
		t.Fatalf("approve in Slack: %d", code)
	}
	for !strings.Contains(log.String(), `"msg":"announce approval"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}

	out := log.String()
	for _, want := range []string{`"level":"DEBUG"`, `"path":"/api/v1/channels/logs/events"`, `"path":"/slack/events"`, `"path":"/api/v1/proposals/` + r.ProposalID + `/approve"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s", want)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("not a JSON line: %s", line)
		}
	}
	checkLogNamesIDs(t, out)
	forbidden := []string{"db-password-0f9e", "wrong-token-3a4b", "forged-secret-5a6b", "Bearer "}
	for _, v := range secrets {
		forbidden = append(forbidden, v)
	}
	forbidden = append(forbidden, "hook-secret-1e2f")
	forbidden = append(forbidden, signatures...)
	for _, s := range forbidden {
		if strings.Contains(out, s) {
			t.Errorf("the log holds %q", s)
		}
	}
	if t.Failed() || os.Getenv("BOBNET_SHOW_LOG") != "" {
		t.Logf("log:\n%s", out)
	}
}
