package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/signing"
	"github.com/bobnet/bobnet/store/storetest"
)

const secret = "test-signing-secret"

// call is one Web API call the fake Slack received.
type call struct {
	Method string
	Form   url.Values     // form-encoded calls
	JSON   map[string]any // JSON calls (views.open)
	TS     string         // the ts Slack answered with
	At     time.Time      // when Slack took it
	// Refused is the error Slack answered with (a refusal), Limited the
	// Retry-After of a 429; both empty when the call went through.
	Refused string
	Limited time.Duration
}

// blocks is the call's blocks as Slack reads their text (JSON escapes of
// <, > and & undone).
func (c call) blocks() string {
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(c.Form.Get("blocks"))
}

// fakeSlack answers Slack's Web API as Slack does and records every call.
type fakeSlack struct {
	srv *httptest.Server
	mu  sync.Mutex
	callLog[call]
	ts int
	// stall, when set, holds every call it matches until release is
	// closed (or the caller gives up), as a hanging Slack API does.
	stall   func(call) bool
	release chan struct{}
	stalled int
	// late, when set, answers the calls it matches only after that
	// long, having recorded them: Slack took the call, the answer is slow.
	late func(call) time.Duration
	// socketURL is what apps.connections.open answers to the app token
	// xapp-test: a Socket Mode server's URL.
	socketURL string
	// refuse, when set, names the error Slack answers a call with
	// (not_allowed_token_type, …); "" lets it through.
	refuse func(call) string
	// limit, when set, answers a call with a 429 and this Retry-After.
	limit func(call) time.Duration
	// slow, when set, takes the calls it matches only after that long:
	// the message shows in the thread once Slack answers.
	slow func(call) time.Duration
}

func newFakeSlack(t *testing.T) *fakeSlack {
	f := &fakeSlack{ts: 100, release: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := strings.TrimPrefix(r.URL.Path, "/api/")
		c := call{Method: method}
		body, _ := io.ReadAll(r.Body)
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			_ = json.Unmarshal(body, &c.JSON)
		} else {
			c.Form, _ = url.ParseQuery(string(body))
		}
		if method == "apps.connections.open" {
			f.mu.Lock()
			f.record(c)
			u := f.socketURL
			f.mu.Unlock()
			if r.Header.Get("Authorization") != "Bearer xapp-test" || u == "" {
				_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "invalid_auth"})
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "url": u})
			return
		}
		if r.Header.Get("Authorization") != "Bearer xoxb-test" && c.Form.Get("token") != "xoxb-test" {
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "not_authed"})
			return
		}
		f.mu.Lock()
		var slow time.Duration
		if f.slow != nil {
			slow = f.slow(c)
		}
		f.mu.Unlock()
		time.Sleep(slow)
		f.mu.Lock()
		stall := f.stall != nil && f.stall(c)
		if stall {
			f.stalled++
		}
		f.mu.Unlock()
		if stall {
			select {
			case <-f.release:
			case <-r.Context().Done():
				return
			}
		}
		f.mu.Lock()
		f.ts++
		ts := fmt.Sprintf("1700000000.%06d", f.ts)
		c.TS, c.At = ts, time.Now()
		if f.limit != nil {
			c.Limited = f.limit(c)
		}
		if f.refuse != nil && c.Limited == 0 {
			c.Refused = f.refuse(c)
		}
		f.record(c)
		var wait time.Duration
		if f.late != nil {
			wait = f.late(c)
		}
		f.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
		}
		w.Header().Set("Content-Type", "application/json")
		if c.Limited > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(c.Limited/time.Second)))
			w.WriteHeader(http.StatusTooManyRequests)
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "ratelimited"})
			return
		}
		if c.Refused != "" {
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": c.Refused})
			return
		}
		switch method {
		case "conversations.replies":
			// The thread's messages as Slack lists them, metadata
			// included when asked for.
			var msgs []map[string]any
			for _, p := range threadOf(f.snapshot(), c.Form.Get("ts")) {
				m := map[string]any{"type": "message", "ts": p.ts, "text": p.text, "thread_ts": c.Form.Get("ts"), "bot_id": "B_BOBNET"}
				if c.Form.Get("include_all_metadata") == "1" && p.metadata != "" {
					var md map[string]any
					_ = json.Unmarshal([]byte(p.metadata), &md)
					m["metadata"] = md
				}
				msgs = append(msgs, m)
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "messages": msgs, "has_more": false})
		case "chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream", "chat.stopStream", "chat.delete":
			if m := method; m != "chat.postMessage" && m != "chat.startStream" {
				ts = c.Form.Get("ts") // the message's own
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": c.Form.Get("channel"), "ts": ts})
		case "assistant.threads.setStatus":
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true})
		case "chat.postEphemeral":
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "message_ts": ts})
		case "usergroups.users.list":
			members := map[string][]string{"S_EDITORS": {"U_EDITOR"}}[c.Form.Get("usergroup")]
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "users": members})
		case "chat.getPermalink":
			q := r.URL.Query() // slack-go asks for a permalink with GET
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": q.Get("channel"), "permalink": "https://example.slack.com/archives/" + q.Get("channel") + "/p" + strings.ReplaceAll(q.Get("message_ts"), ".", "")})
		case "views.open":
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "view": map[string]any{"id": "V1"}})
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "unknown_method"})
		}
	}))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.release) }) // runs first: stalled calls end before the server closes
	return f
}

// heldMessage is a message in a thread as Slack holds it after the
// calls made so far.
type heldMessage struct {
	ts, text, metadata string
}

// threadOf is thread's messages, as calls left them: posted or streamed
// (a stream's text is its markdown), redrawn (text, metadata), deleted.
func threadOf(calls []call, thread string) []heldMessage {
	var msgs []heldMessage
	at := map[string]int{}
	for _, c := range calls {
		if c.Refused != "" || c.Limited > 0 {
			continue
		}
		i, ok := at[c.Form.Get("ts")]
		switch c.Method {
		case "chat.postMessage", "chat.startStream":
			if c.Form.Get("thread_ts") != thread {
				continue
			}
			i, ok = len(msgs), true
			at[c.TS] = i
			msgs = append(msgs, heldMessage{ts: c.TS})
		case "chat.update", "chat.appendStream", "chat.stopStream":
		case "chat.delete":
			if ok {
				msgs[i].ts = ""
			}
			continue
		default:
			continue
		}
		if !ok {
			continue
		}
		m := &msgs[i]
		if t := c.Form.Get("text"); t != "" {
			m.text = t
		}
		m.text += streamedMarkdown(c.Form.Get("chunks"))
		if md := c.Form.Get("metadata"); md != "" {
			m.metadata = md
		}
	}
	kept := msgs[:0]
	for _, m := range msgs {
		if m.ts != "" {
			kept = append(kept, m)
		}
	}
	return kept
}

// streamedMarkdown is the markdown text of a stream's chunks.
func streamedMarkdown(chunks string) string {
	var cs []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal([]byte(chunks), &cs)
	var b strings.Builder
	for _, c := range cs {
		if c.Type == "markdown_text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

type world struct {
	env   *bottest.Env
	slack *fakeSlack
	app   *httptest.Server
	ad    *slack.Adapter

	mu      sync.Mutex
	handler http.Handler
}

// serve swaps the handler behind the world's server, for tests that wrap
// the engine or change the adapter's settings.
func (w *world) serve(h http.Handler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handler = h
}

func newWorld(t *testing.T, opts ...bottest.Option) *world {
	t.Helper()
	return newWorldWith(t, nil, opts...)
}

// newWorldWith is newWorld with the adapter's settings adjusted first.
// Its engine shows neither drafts nor runs through the adapter (the
// previews are posted as messages); showing registers them.
func newWorldWith(t *testing.T, adjust func(*slack.Config), opts ...bottest.Option) *world {
	t.Helper()
	return newWorldOf(t, adjust, nil, opts...)
}

// newWorldOf is newWorldWith whose adapter keeps its state in memory
// wrapped (nil: Redis as it is).
func newWorldOf(t *testing.T, adjust func(*slack.Config), memory func(slack.Memory) slack.Memory, opts ...bottest.Option) *world {
	t.Helper()
	env := bottest.New(t, opts...)
	plan := plannertest.NewspaperPlan(t)
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: plan} })
	fs := newFakeSlack(t)
	cfg := slack.Config{BotToken: "xoxb-test", SigningSecret: secret, APIURL: fs.srv.URL + "/api/", PublicURL: "https://bobnet.example.com"}
	if adjust != nil {
		adjust(&cfg)
	}
	var mem slack.Memory = redisstore.NewInFlight(env.Redis, env.Prefix)
	if memory != nil {
		mem = memory(mem)
	}
	ad, err := slack.New(context.Background(), cfg, env.Engine, mem, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	env.Engine.Register(board.SourceSlack, bot.Registration{Poster: ad, Notifier: ad, Reminders: ad, Groups: ad})
	r := chi.NewRouter()
	ad.Routes(r)
	w := &world{env: env, slack: fs, handler: r, ad: ad}
	w.app = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		w.mu.Lock()
		h := w.handler
		w.mu.Unlock()
		h.ServeHTTP(rw, req)
	}))
	t.Cleanup(w.app.Close)
	return w
}

// post sends a signed request to one of the Slack endpoints.
func (w *world) post(t *testing.T, path, contentType, body string, headers ...string) *http.Response {
	t.Helper()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequest("POST", w.app.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", signing.SlackSignature(secret, ts, []byte(body)))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func mentionEvent(eventID, ts, text string) string {
	b, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": eventID, "event_time": 1700000000,
		"event": map[string]any{"type": "app_mention", "user": "U_ALICE", "text": "<@UBOBNET> " + text, "ts": ts, "channel": "C_NEWS", "event_ts": ts},
	})
	return string(b)
}

func blockAction(user, actionID, value, messageTS string) string {
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "trigger_id": "T-" + actionID, "user": map[string]any{"id": user},
		"channel":   map[string]any{"id": "C_NEWS"},
		"container": map[string]any{"type": "message", "message_ts": messageTS, "channel_id": "C_NEWS", "thread_ts": "1690000000.000001"},
		"message":   map[string]any{"ts": messageTS, "thread_ts": "1690000000.000001"},
		"actions":   []map[string]any{{"action_id": actionID, "block_id": "bobnet_decision:" + value, "type": "button", "value": value, "action_ts": "1"}},
	})
	return "payload=" + url.QueryEscape(string(payload))
}

var proposalID = regexp.MustCompile(`"value":"(p_[a-z0-9]+)"`)

func isPreview(c call) bool {
	return c.Method == "chat.postMessage" && strings.Contains(c.Form.Get("blocks"), "bobnet_approve")
}

func TestSlackEndToEnd(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	event := mentionEvent("Ev001", "1690000000.000001", "plan our daily research newspaper <!channel>")

	start := time.Now()
	resp := w.post(t, "/slack/events", "application/json", event)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("ack took %s", d)
	}
	// Slack retries: the same event twice more.
	for i := 1; i <= 2; i++ {
		if resp := w.post(t, "/slack/events", "application/json", event, "X-Slack-Retry-Num", strconv.Itoa(i), "X-Slack-Retry-Reason", "http_timeout"); resp.StatusCode != http.StatusOK {
			t.Fatalf("retry %d: %d", i, resp.StatusCode)
		}
	}
	preview := w.slack.waitFor(t, "preview", isPreview)
	if preview.Form.Get("thread_ts") != "1690000000.000001" || preview.Form.Get("channel") != "C_NEWS" || preview.Form.Get("reply_broadcast") == "true" {
		t.Fatalf("preview posted outside the thread: %v", preview.Form)
	}
	// The posted blocks are the golden preview, but for ids and times.
	m := proposalID.FindStringSubmatch(preview.Form.Get("blocks"))
	if m == nil {
		t.Fatalf("no proposal id in %s", preview.Form.Get("blocks"))
	}
	pid := m[1]
	var posted, want any
	_ = json.Unmarshal([]byte(normalize(preview.Form.Get("blocks"), pid)), &posted)
	_ = json.Unmarshal([]byte(normalize(plannertest.Testdata(t, "slack/preview-newspaper.json"), "p_golden")), &want)
	pj, _ := json.Marshal(posted)
	wj, _ := json.Marshal(want)
	if string(pj) != string(wj) {
		t.Errorf("posted preview differs from testdata/slack/preview-newspaper.json:\n%s\n%s", pj, wj)
	}

	w.env.WaitIdle(t) // every request answered: a duplicate would show now
	if n := w.slack.count(isPreview); n != 1 {
		t.Fatalf("%d previews for one event delivered three times", n)
	}
	if n := count(t, w, "SELECT count(*) FROM proposals"); n != 1 {
		t.Fatalf("proposals = %d", n)
	}

	// Someone else clicks Approve: told privately, nothing happens.
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_MALLORY", "bobnet_approve", pid, preview.TS))
	eph := w.slack.waitFor(t, "ephemeral refusal", func(c call) bool { return c.Method == "chat.postEphemeral" })
	if eph.Form.Get("user") != "U_MALLORY" || !strings.Contains(eph.Form.Get("text"), "Only the person who asked") {
		t.Fatalf("ephemeral = %v", eph.Form)
	}

	// The requester approves.
	if resp := w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_ALICE", "bobnet_approve", pid, preview.TS)); resp.StatusCode != http.StatusOK {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	update := w.slack.waitFor(t, "chat.update", func(c call) bool { return c.Method == "chat.update" })
	if !strings.Contains(update.blocks(), "Approved by <@U_ALICE>") || strings.Contains(update.blocks(), "bobnet_approve") || update.Form.Get("ts") != preview.TS {
		t.Fatalf("update = %s", update.Form.Get("blocks"))
	}
	reply := w.slack.waitFor(t, "board link reply", func(c call) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.blocks(), "http://bobnet.test/boards/b_")
	})
	if reply.Form.Get("thread_ts") != "1690000000.000001" || !strings.Contains(reply.blocks(), "Approved by U_ALICE") {
		t.Fatalf("reply = %v", reply.Form)
	}
	if n := count(t, w, "SELECT count(*) FROM cards"); n != 10 {
		t.Fatalf("cards = %d", n)
	}
	if n := count(t, w, "SELECT count(*) FROM card_links"); n != 13 {
		t.Fatalf("links = %d", n)
	}
	// A second click is recognised, not executed.
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_ALICE", "bobnet_approve", pid, preview.TS))
	w.slack.waitFor(t, "already-approved notice", func(c call) bool {
		return c.Method == "chat.postEphemeral" && strings.Contains(c.Form.Get("text"), "already approved")
	})
	if n := count(t, w, "SELECT count(*) FROM boards"); n != 1 {
		t.Fatalf("boards = %d", n)
	}

	// /bobnet status answers with the board's counts.
	resp = w.post(t, "/slack/commands", "application/x-www-form-urlencoded", url.Values{"command": {"/bobnet"}, "text": {"status"}, "channel_id": {"C_NEWS"}, "user_id": {"U_ALICE"}}.Encode())
	var status struct {
		ResponseType string `json:"response_type"`
		Blocks       []any
	}
	_ = json.NewDecoder(resp.Body).Decode(&status)
	sj, _ := json.Marshal(status.Blocks)
	if status.ResponseType != "in_channel" || !strings.Contains(string(sj), "Backlog *9*") || !strings.Contains(string(sj), "Ready *1*") || !strings.Contains(string(sj), "Daily Research Newspaper") {
		t.Fatalf("status = %s %s", status.ResponseType, sj)
	}
}

// normalize replaces the proposal id and the expiry times, which differ
// from run to run.
func normalize(blocks, pid string) string {
	blocks = strings.ReplaceAll(blocks, pid, "PROPOSAL")
	blocks = regexp.MustCompile(`<!date\^\d+\^[^|]*\|[^>]*>`).ReplaceAllString(blocks, "DATE")
	return regexp.MustCompile(`\\u003c!date\^\d+\^[^|]*\|[^\\]*\\u003e`).ReplaceAllString(blocks, "DATE")
}

func count(t *testing.T, w *world, q string) int {
	t.Helper()
	var n int
	if err := w.env.Store.Pool().QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSlackMalformedIDs checks that an id no BobNet made, in a button, in
// a revise modal's metadata or in /bobnet status, is answered as an unknown
// one is, and that an unknown board id is not taken for the channel's.
func TestSlackMalformedIDs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	gone := func(c call) bool {
		return c.Method == "chat.postEphemeral" && strings.Contains(c.Form.Get("text"), "I can't find that proposal any more.")
	}
	values := []string{"", "p_x", "../p_aaaaaaaaaaaaaaaa", "P_AAAAAAAAAAAAAAAA", "p_aaaaaaaaaaaaaaa1"}
	for _, v := range values {
		for _, action := range []string{"bobnet_approve", "bobnet_revise"} {
			if resp := w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_ALICE", action, v, "1690000000.000002")); resp.StatusCode != http.StatusOK {
				t.Fatalf("%s %q: %d", action, v, resp.StatusCode)
			}
		}
	}
	for deadline := time.Now().Add(20 * time.Second); w.slack.count(gone) < 2*len(values); {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d clicks told the proposal is gone; calls: %+v", w.slack.count(gone), 2*len(values), w.slack.snapshot())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := w.slack.count(func(c call) bool { return c.Method == "views.open" }); n != 0 {
		t.Errorf("%d revise modals opened for malformed ids", n)
	}

	payload, _ := json.Marshal(map[string]any{
		"type": "view_submission", "user": map[string]any{"id": "U_ALICE"},
		"view": map[string]any{"id": "V1", "callback_id": "bobnet_revise_modal", "private_metadata": `{"p":"../p_x","c":"C_NEWS","t":"1"}`,
			"state": map[string]any{"values": map[string]any{"feedback": map[string]any{"feedback_input": map[string]any{"type": "plain_text_input", "value": "more cards"}}}}},
	})
	resp := w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", "payload="+url.QueryEscape(string(payload)))
	if body, _ := io.ReadAll(resp.Body); !strings.Contains(string(body), "I can't find that proposal any more.") {
		t.Errorf("revise with malformed metadata: %s", body)
	}

	status := func(arg string) string {
		resp := w.post(t, "/slack/commands", "application/x-www-form-urlencoded", url.Values{"command": {"/bobnet"}, "text": {"status " + arg}, "channel_id": {"C_NEWS"}, "user_id": {"U_ALICE"}}.Encode())
		var reply struct{ Text string }
		_ = json.NewDecoder(resp.Body).Decode(&reply)
		return reply.Text
	}
	for _, arg := range []string{"nonsense", "../b_" + strings.Repeat("a", 26), "b_" + strings.Repeat("a", 25) + "1"} {
		if got := status(arg); !strings.Contains(got, "That is not a board id") {
			t.Errorf("status %s = %q", arg, got)
		}
	}
	if got := status("b_" + strings.Repeat("a", 26)); !strings.Contains(got, "There is no board with that id") {
		t.Errorf("status of an unknown board = %q", got)
	}
	if n := w.env.Model.Requests(); len(n) != 0 {
		t.Errorf("the model was asked %d times", len(n))
	}
}

func TestSlackReviseModal(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.post(t, "/slack/events", "application/json", mentionEvent("Ev100", "1690000000.000001", "plan our daily research newspaper"))
	preview := w.slack.waitFor(t, "preview", isPreview)
	pid := proposalID.FindStringSubmatch(preview.Form.Get("blocks"))[1]

	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_ALICE", "bobnet_revise", pid, preview.TS))
	open := w.slack.waitFor(t, "views.open", func(c call) bool { return c.Method == "views.open" })
	if open.JSON["trigger_id"] != "T-bobnet_revise" {
		t.Fatalf("views.open = %v", open.JSON)
	}
	view := open.JSON["view"].(map[string]any)
	meta := view["private_metadata"].(string)

	submission := func(feedback string) string {
		payload, _ := json.Marshal(map[string]any{
			"type": "view_submission", "user": map[string]any{"id": "U_ALICE"},
			"view": map[string]any{"id": "V1", "callback_id": view["callback_id"], "private_metadata": meta,
				"state": map[string]any{"values": map[string]any{"feedback": map[string]any{"feedback_input": map[string]any{"type": "plain_text_input", "value": feedback}}}}},
		})
		return "payload=" + url.QueryEscape(string(payload))
	}
	// Empty feedback keeps the modal open with an error.
	resp := w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", submission("  "))
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `"response_action":"errors"`) {
		t.Fatalf("empty feedback: %s", body)
	}
	resp = w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", submission("add a card for an RSS feed"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("submission: %d", resp.StatusCode)
	}
	v2 := w.slack.waitFor(t, "revised preview", func(c call) bool { return isPreview(c) && strings.Contains(c.blocks(), "v2 requested by") })
	if v2.Form.Get("thread_ts") != "1690000000.000001" || !strings.Contains(v2.blocks(), "Changed since v1") {
		t.Fatalf("v2 = %s", v2.Form.Get("blocks"))
	}
	w.slack.waitFor(t, "superseded update", func(c call) bool {
		return c.Method == "chat.update" && c.Form.Get("ts") == preview.TS && strings.Contains(c.blocks(), "Superseded")
	})
	// The model saw the feedback.
	reqs := w.env.Model.Requests()
	if !strings.Contains(plannertest.LastUserMessage(reqs[len(reqs)-1]), "add a card for an RSS feed") {
		t.Error("feedback not sent to the model")
	}
}

func TestSlackRejectsBadSignatures(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	body := mentionEvent("Ev200", "1690000000.000009", "plan something")
	for name, mutate := range map[string]func(*http.Request){
		"wrong signature": func(r *http.Request) { r.Header.Set("X-Slack-Signature", "v0=deadbeef") },
		"stale": func(r *http.Request) {
			r.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10))
		},
		"unsigned": func(r *http.Request) { r.Header.Del("X-Slack-Signature") },
	} {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req, _ := http.NewRequest("POST", w.app.URL+"/slack/events", strings.NewReader(body))
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", signing.SlackSignature(secret, ts, []byte(body)))
		mutate(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d", name, resp.StatusCode)
		}
	}
	// A refused request is refused before the engine: the stream never
	// got an entry, so nothing can be planned later either.
	if n, _ := w.env.Queue.Len(context.Background()); n != 0 {
		t.Fatalf("stream entries = %d", n)
	}
	if n := len(w.env.Model.Requests()); n != 0 {
		t.Fatalf("the model was asked %d times", n)
	}
	if n := len(w.slack.snapshot()); n != 0 {
		t.Fatalf("slack was called %d times", n)
	}
	// url_verification is answered with the challenge once signed.
	resp := w.post(t, "/slack/events", "application/json", `{"type":"url_verification","challenge":"abc123","token":"x"}`)
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "abc123" {
		t.Fatalf("challenge: %q", b)
	}
}

func TestSlackHelpAndThreadReplies(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// An empty mention gets help in its thread.
	w.post(t, "/slack/events", "application/json", mentionEvent("Ev300", "1690000000.000300", ""))
	help := w.slack.waitFor(t, "help", func(c call) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.blocks(), "/bobnet status")
	})
	if help.Form.Get("thread_ts") != "1690000000.000300" {
		t.Fatalf("help outside the thread: %v", help.Form)
	}
	message := func(id, ts, thread, text string) string {
		b, _ := json.Marshal(map[string]any{"type": "event_callback", "team_id": "T1", "event_id": id,
			"event": map[string]any{"type": "message", "user": "U_ALICE", "text": text, "ts": ts, "thread_ts": thread, "channel": "C_NEWS"}})
		return string(b)
	}
	// A plain reply in a thread BobNet is in is a request; one elsewhere is not.
	w.post(t, "/slack/events", "application/json", message("Ev301", "1690000000.000400", "1690000000.999999", "plan our daily research newspaper"))
	w.post(t, "/slack/events", "application/json", message("Ev302", "1690000000.000301", "1690000000.000300", "plan our daily research newspaper"))
	preview := w.slack.waitFor(t, "preview", isPreview)
	if preview.Form.Get("thread_ts") != "1690000000.000300" {
		t.Fatalf("preview thread = %s", preview.Form.Get("thread_ts"))
	}
	w.env.WaitIdle(t)
	if n := w.slack.count(isPreview); n != 1 {
		t.Fatalf("previews = %d", n)
	}
	// Bots and edits are not requests.
	b, _ := json.Marshal(map[string]any{"type": "event_callback", "event_id": "Ev303",
		"event": map[string]any{"type": "message", "subtype": "message_changed", "user": "U_ALICE", "text": "x", "ts": "1", "thread_ts": "1690000000.000300", "channel": "C_NEWS"}})
	w.post(t, "/slack/events", "application/json", string(b))
	// The event was handled before the ack: had it been a request, the
	// stream would hold it now.
	w.env.WaitIdle(t)
	if n := len(w.env.Model.Requests()); n != 1 {
		t.Fatalf("model asked %d times", n)
	}
}

// threadMessage is a message event in a thread from U_ALICE.
func threadMessage(eventID, ts, thread, text string) string {
	b, _ := json.Marshal(map[string]any{"type": "event_callback", "team_id": "T1", "event_id": eventID,
		"event": map[string]any{"type": "message", "user": "U_ALICE", "text": text, "ts": ts, "thread_ts": thread, "channel": "C_NEWS"}})
	return string(b)
}

// A reply in BobNet's thread that mentions a colleague is still the
// conversation with BobNet, as a reply without mentions is; a message
// that mentions BobNet arrives twice (app_mention and message) and makes
// one request; a reply that only pings a colleague asks BobNet nothing.
func TestThreadReplyMentioningAColleague(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const thread = "1690000000.000500"
	w.post(t, "/slack/events", "application/json", mentionEvent("Ev500", thread, ""))
	w.slack.waitFor(t, "help", func(c call) bool { return c.Method == "chat.postMessage" && c.Form.Get("thread_ts") == thread })

	// Only a colleague's mention: nothing to plan, and no help either.
	w.post(t, "/slack/events", "application/json", threadMessage("Ev501", "1690000000.000501", thread, "<@UCAROL>"))
	// A reply that mentions a colleague (and the label form of a mention).
	w.post(t, "/slack/events", "application/json", threadMessage("Ev502", "1690000000.000502", thread,
		"<@UCAROL> can you check this? <@UDAN|dan> too: plan our daily research newspaper"))
	preview := w.slack.waitFor(t, "preview", isPreview)
	if preview.Form.Get("thread_ts") != thread {
		t.Fatalf("preview in thread %s, want %s", preview.Form.Get("thread_ts"), thread)
	}
	w.env.WaitIdle(t)
	reqs := w.env.Model.Requests()
	if len(reqs) != 1 || !strings.Contains(plannertest.LastUserMessage(reqs[0]), "plan our daily research newspaper") {
		t.Fatalf("model asked %d times", len(reqs))
	}

	// A reply mentioning BobNet comes as app_mention and as message, with
	// one ts: one request, whichever comes first.
	mention, _ := json.Marshal(map[string]any{"type": "event_callback", "team_id": "T1", "event_id": "Ev503",
		"event": map[string]any{"type": "app_mention", "user": "U_ALICE", "text": "<@UBOBNET> add an RSS feed card", "ts": "1690000000.000503", "thread_ts": thread, "channel": "C_NEWS"}})
	w.post(t, "/slack/events", "application/json", threadMessage("Ev504", "1690000000.000503", thread, "<@UBOBNET> add an RSS feed card"))
	w.post(t, "/slack/events", "application/json", string(mention))
	w.env.WaitIdle(t)
	if n := len(w.env.Model.Requests()); n != 2 {
		t.Fatalf("model asked %d times, want 2 (the mention and its message event are one request)", n)
	}
	helps := w.slack.count(func(c call) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.blocks(), "/bobnet status")
	})
	if helps != 1 {
		t.Fatalf("help replies = %d, want 1 (a colleague's bare mention asks nothing)", helps)
	}
}

// TestLatePreviewIsFoundNotPostedAgain: Slack takes the preview but
// answers after the post timeout; the next attempt finds the preview in
// the thread by its metadata instead of posting a second one.
func TestLatePreviewIsFoundNotPostedAgain(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bottest.WithConfig(func(c *bot.Config) { c.PostTimeout = 300 * time.Millisecond }))
	var once sync.Once
	w.slack.late = func(c call) time.Duration {
		wait := time.Duration(0)
		if isPreview(c) {
			once.Do(func() { wait = 800 * time.Millisecond })
		}
		return wait
	}
	if resp := w.post(t, "/slack/events", "application/json", mentionEvent("EvLate", "1690000000.000077", "plan our daily research newspaper")); resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	w.slack.waitFor(t, "a look for the preview", func(c call) bool { return c.Method == "conversations.replies" })
	preview := w.slack.waitFor(t, "preview", isPreview)
	pid := proposalID.FindStringSubmatch(preview.Form.Get("blocks"))[1]
	if md := preview.Form.Get("metadata"); !strings.Contains(md, `"event_type":"bobnet_preview"`) || !strings.Contains(md, pid) {
		t.Fatalf("preview metadata %q", md)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := w.env.Engine.Proposal(context.Background(), board.ProposalID(pid))
		if err == nil && p.Message == board.MessageRef(preview.TS) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("preview not recorded as %s: %+v %v", preview.TS, p.Message, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // past a reclaim
	if n := w.slack.count(isPreview); n != 1 {
		t.Fatalf("previews posted = %d, want 1", n)
	}
}
