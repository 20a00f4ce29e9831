package slack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/secretbox"
	"github.com/bobnet/bobnet/store/storetest"
)

// fakeSocket is Slack's end of a Socket Mode connection: it greets a
// connecting app with hello, sends it envelopes and collects its acks.
type fakeSocket struct {
	srv   *httptest.Server
	conns chan *websocket.Conn
	acks  chan socketAck
}

// socketAck is what an app writes back for an envelope.
type socketAck struct {
	EnvelopeID string          `json:"envelope_id"`
	Payload    json.RawMessage `json:"payload"`
}

func newFakeSocket(t *testing.T) *fakeSocket {
	f := &fakeSocket{conns: make(chan *websocket.Conn, 4), acks: make(chan socketAck, 16)}
	// Slack's client sends its own site as the Origin.
	upgrader := websocket.Upgrader{CheckOrigin: func(r *http.Request) bool { return r.Header.Get("Origin") == "https://api.slack.com" }}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		hello := `{"type":"hello","num_connections":1,"debug_info":{"host":"applink-test","approximate_connection_time":18060},"connection_info":{"app_id":"A1"}}`
		if err := conn.WriteMessage(websocket.TextMessage, []byte(hello)); err != nil {
			return
		}
		f.conns <- conn
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var ack socketAck
			if json.Unmarshal(msg, &ack) == nil && ack.EnvelopeID != "" {
				f.acks <- ack
			}
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSocket) url() string {
	return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/link/?ticket=t1&app_id=A1"
}

// serve registers ad as the engine's Slack poster, runs its Socket Mode
// until the test ends and returns the connection it made.
func (f *fakeSocket) serve(t *testing.T, eng *bot.Engine, ad *slack.Adapter) *websocket.Conn {
	t.Helper()
	eng.Register(board.SourceSlack, bot.Registration{Poster: ad, Notifier: ad, Reminders: ad, Groups: ad})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ad.RunSocketMode(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case conn := <-f.conns:
		return conn
	case <-time.After(10 * time.Second):
		t.Fatal("the app did not connect")
		return nil
	}
}

// send writes an envelope as Slack does, on conn.
func send(t *testing.T, conn *websocket.Conn, envelopeID, typ string, payload json.RawMessage, retry int) {
	t.Helper()
	env, _ := json.Marshal(map[string]any{
		"envelope_id": envelopeID, "type": typ, "payload": payload,
		"accepts_response_payload": typ != "events_api", "retry_attempt": retry, "retry_reason": map[bool]string{true: "timeout"}[retry > 0],
	})
	if err := conn.WriteMessage(websocket.TextMessage, env); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeSocket) waitAck(t *testing.T, envelopeID string) socketAck {
	t.Helper()
	select {
	case ack := <-f.acks:
		if ack.EnvelopeID != envelopeID {
			t.Fatalf("acked %s, want %s", ack.EnvelopeID, envelopeID)
		}
		return ack
	case <-time.After(10 * time.Second):
		t.Fatalf("no ack for %s", envelopeID)
		return socketAck{}
	}
}

// TestSocketModeOverTheWire runs BobNet's Socket Mode with slack-go's
// client against a server speaking Slack's wire format: the app token
// opens the connection; a mention comes in an events_api envelope and is
// acked by its envelope id; its redelivery makes no second preview; the
// Approve click comes in an interactive envelope; a slash command's
// answer rides in its ack; when Slack refreshes the connection, the app
// connects again and goes on.
func TestSocketModeOverTheWire(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sock := newFakeSocket(t)
	w.slack.mu.Lock()
	w.slack.socketURL = sock.url()
	w.slack.mu.Unlock()
	ad, err := slack.New(context.Background(), slack.Config{BotToken: "xoxb-test", AppToken: "xapp-test", APIURL: w.slack.srv.URL + "/api/"},
		w.env.Engine, redisstore.NewInFlight(w.env.Redis, w.env.Prefix), storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	conn := sock.serve(t, w.env.Engine, ad)
	if n := w.slack.count(func(c call) bool { return c.Method == "apps.connections.open" }); n != 1 {
		t.Fatalf("apps.connections.open called %d times", n)
	}

	mention := json.RawMessage(mentionEvent("EvWire", "1690000000.000001", "plan our daily research newspaper"))
	send(t, conn, "env-1", "events_api", mention, 0)
	sock.waitAck(t, "env-1")
	preview := w.slack.waitFor(t, "preview", isPreview)
	// Slack delivers it again, as when an ack is late.
	send(t, conn, "env-2", "events_api", mention, 1)
	sock.waitAck(t, "env-2")
	w.env.WaitIdle(t)
	if n := w.slack.count(isPreview); n != 1 {
		t.Fatalf("%d previews for one mention delivered twice", n)
	}

	m := proposalID.FindStringSubmatch(preview.Form.Get("blocks"))
	if m == nil {
		t.Fatalf("no proposal id in %s", preview.Form.Get("blocks"))
	}
	click, _ := url.QueryUnescape(strings.TrimPrefix(blockAction("U_ALICE", "bobnet_approve", m[1], preview.TS), "payload="))
	send(t, conn, "env-3", "interactive", json.RawMessage(click), 0)
	sock.waitAck(t, "env-3")
	w.slack.waitFor(t, "board link reply", func(c call) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.blocks(), "/boards/b_")
	})
	if n := count(t, w, "SELECT count(*) FROM boards"); n != 1 {
		t.Fatalf("boards = %d", n)
	}

	command, _ := json.Marshal(map[string]string{"team_id": "T1", "channel_id": "C_NEWS", "user_id": "U_ALICE", "command": "/bobnet", "text": "status", "trigger_id": "tr-1"})
	send(t, conn, "env-4", "slash_commands", command, 0)
	ack := sock.waitAck(t, "env-4")
	if !strings.Contains(string(ack.Payload), "Daily Research Newspaper") || !strings.Contains(string(ack.Payload), `"response_type":"in_channel"`) {
		t.Fatalf("the status command's ack = %s", ack.Payload)
	}

	// Slack refreshes connections every few hours: it says so and hangs
	// up. The app opens a new one and goes on there.
	bye := `{"type":"disconnect","reason":"refresh_requested","debug_info":{"host":"applink-test"}}`
	if err := conn.WriteMessage(websocket.TextMessage, []byte(bye)); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	select {
	case conn = <-sock.conns:
	case <-time.After(20 * time.Second):
		t.Fatal("the app did not connect again")
	}
	send(t, conn, "env-5", "events_api", json.RawMessage(mentionEvent("EvWire2", "1690000001.000001", "plan the weekly digest")), 0)
	sock.waitAck(t, "env-5")
	w.slack.waitFor(t, "preview after the reconnect", func(c call) bool {
		return isPreview(c) && c.Form.Get("thread_ts") == "1690000001.000001"
	})
	if n := w.slack.count(func(c call) bool { return c.Method == "apps.connections.open" }); n != 2 {
		t.Fatalf("apps.connections.open called %d times for two connections", n)
	}
}

// TestSocketModeWithInstalls: Socket Mode in multi-workspace mode. One
// app-level connection carries every workspace's events; each is answered
// in its own workspace with its own token, a click decides in the
// workspace it came from, and an event of a workspace BobNet is not
// installed in is acked and left alone.
func TestSocketModeWithInstalls(t *testing.T) {
	t.Parallel()
	w := newTeamsWorld(t)
	tokA, tokB := w.install(t, "T_A"), w.install(t, "T_B")
	sock := newFakeSocket(t)
	w.slack.mu.Lock()
	w.slack.socketURL = sock.url()
	w.slack.mu.Unlock()
	box, err := secretbox.New(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	ad := w.adapter(t, box, func(c *slack.Config) { c.AppToken = "xapp-test" })
	conn := sock.serve(t, w.env.Engine, ad)

	const threadA, threadB, threadX = "1690000000.000001", "1690000000.000002", "1690000000.000003"
	send(t, conn, "env-a", "events_api", json.RawMessage(teamMention("T_A", "EvA", "C0123", threadA, "plan our daily research newspaper")), 0)
	send(t, conn, "env-b", "events_api", json.RawMessage(teamMention("T_B", "EvB", "C0123", threadB, "plan our daily research newspaper")), 0)
	send(t, conn, "env-x", "events_api", json.RawMessage(teamMention("T_NOBODY", "EvX", "C0123", threadX, "plan something")), 0)
	for _, id := range []string{"env-a", "env-b", "env-x"} {
		sock.waitAck(t, id)
	}
	prevA := w.slack.waitFor(t, "team A's preview", isTeamPreview(threadA))
	prevB := w.slack.waitFor(t, "team B's preview", isTeamPreview(threadB))
	if prevA.Token != tokA || prevB.Token != tokB {
		t.Fatalf("previews posted with the wrong workspace's token")
	}
	pidA := proposalID.FindStringSubmatch(prevA.Form.Get("blocks"))[1]
	click, _ := url.QueryUnescape(strings.TrimPrefix(teamClick("T_A", "U_ALICE", "bobnet_approve", pidA, "C0123", prevA.TS, threadA), "payload="))
	send(t, conn, "env-click", "interactive", json.RawMessage(click), 0)
	sock.waitAck(t, "env-click")
	update := w.slack.waitFor(t, "team A's preview updated", func(c teamCall) bool { return c.Method == "chat.update" })
	if update.Token != tokA || update.Form.Get("ts") != prevA.TS {
		t.Fatalf("update = %v with the wrong token", update.Form)
	}
	w.env.WaitIdle(t)
	for _, c := range w.slack.snapshot() {
		if c.Form.Get("thread_ts") == threadX {
			t.Fatalf("a workspace without BobNet was answered: %+v", c)
		}
	}
	if p, _ := w.env.Engine.Proposal(context.Background(), board.ProposalID(proposalID.FindStringSubmatch(prevB.Form.Get("blocks"))[1])); p.State != board.ProposalPending {
		t.Fatalf("team B's proposal is %s after team A's approval", p.State)
	}
}
