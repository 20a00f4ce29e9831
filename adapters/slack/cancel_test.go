package slack_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	"github.com/bobnet/bobnet/store/storetest"
)

func TestSlackCancelModalWithReason(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.post(t, "/slack/events", "application/json", mentionEvent("Ev300", "1690000000.000001", "plan our daily research newspaper"))
	preview := w.slack.waitFor(t, "preview", isPreview)
	pid := proposalID.FindStringSubmatch(preview.Form.Get("blocks"))[1]

	// Someone who may not decide gets no modal.
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_MALLORY", "bobnet_cancel", pid, preview.TS))
	w.slack.waitFor(t, "refusal", func(c call) bool { return c.Method == "chat.postEphemeral" && c.Form.Get("user") == "U_MALLORY" })

	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_ALICE", "bobnet_cancel", pid, preview.TS))
	open := w.slack.waitFor(t, "views.open", func(c call) bool { return c.Method == "views.open" })
	view := open.JSON["view"].(map[string]any)
	if open.JSON["trigger_id"] != "T-bobnet_cancel" || view["callback_id"] != "bobnet_cancel_modal" {
		t.Fatalf("views.open = %v", open.JSON)
	}
	if w.slack.count(func(c call) bool { return c.Method == "views.open" }) != 1 {
		t.Fatal("a modal was opened for someone who may not decide")
	}
	submission := func(reason string) string {
		payload, _ := json.Marshal(map[string]any{
			"type": "view_submission", "user": map[string]any{"id": "U_ALICE"},
			"view": map[string]any{"id": "V1", "callback_id": view["callback_id"], "private_metadata": view["private_metadata"],
				"state": map[string]any{"values": map[string]any{"reason": map[string]any{"reason_input": map[string]any{"type": "plain_text_input", "value": reason}}}}},
		})
		return "payload=" + url.QueryEscape(string(payload))
	}
	// A reason past the bound keeps the modal open with the field's error,
	// and cancels nothing.
	resp := w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", submission(strings.Repeat("x", bot.MaxCancelReason+1)))
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `"response_action":"errors"`) || !strings.Contains(string(body), `"reason":`) {
		t.Fatalf("long reason: %s", body)
	}
	if p, err := w.env.Engine.Proposal(context.Background(), board.ProposalID(pid)); err != nil || p.State != board.ProposalPending {
		t.Fatalf("after a refused reason: %+v, %v", p.State, err)
	}
	resp = w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", submission("budget moved <!channel> @here"))
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || len(strings.TrimSpace(string(body))) != 0 {
		t.Fatalf("submission: %d %s", resp.StatusCode, body)
	}
	escaped := "budget moved &lt;!channel&gt; @\u200dhere"
	w.slack.waitFor(t, "redrawn preview", func(c call) bool {
		return c.Method == "chat.update" && c.Form.Get("ts") == preview.TS && strings.Contains(c.Form.Get("blocks"), "Cancelled by \\u003c@U_ALICE\\u003e: "+strings.ReplaceAll(strings.ReplaceAll(escaped, "&", "\\u0026"), "\u200d", "\u200d"))
	})
	w.slack.waitFor(t, "the thread's line", func(c call) bool {
		return c.Method == "chat.postMessage" && c.Form.Get("thread_ts") == "1690000000.000001" && strings.Contains(c.blocks(), "Cancelled by U_ALICE: "+escaped)
	})
	evs, err := w.env.Store.Audit(context.Background(), board.AuditFilter{ProposalID: board.ProposalID(pid)})
	if err != nil {
		t.Fatal(err)
	}
	var detail map[string]any
	if last := evs[len(evs)-1]; last.Action != "cancelled" || last.Actor != "U_ALICE" || json.Unmarshal(last.Detail, &detail) != nil || detail["reason"] != "budget moved <!channel> @here" {
		t.Fatalf("audit = %+v", evs)
	}
}

// clock is the engine's clock in a test: it moves only when told.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// clockWorld is newWorld with the engine on clk and U_ROOT (and a console
// user) as admins.
func clockWorld(t *testing.T, clk *clock) *world {
	t.Helper()
	env := bottest.New(t, bottest.WithDeps(func(d *bot.Deps) { d.Now = clk.Now }), bottest.WithConfig(func(c *bot.Config) { c.Admins = []string{"U_ROOT", "root"} }))
	plan := plannertest.NewspaperPlan(t)
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: plan} })
	fs := newFakeSlack(t)
	ad, err := slack.New(context.Background(), slack.Config{BotToken: "xoxb-test", SigningSecret: secret, APIURL: fs.srv.URL + "/api/", PublicURL: "https://bobnet.example.com"},
		env.Engine, redisstore.NewInFlight(env.Redis, env.Prefix), storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	env.Engine.Register(board.SourceSlack, bot.Registration{Poster: ad, Notifier: ad, Reminders: ad, Groups: ad})
	r := chi.NewRouter()
	ad.Routes(r)
	w := &world{env: env, slack: fs, handler: r}
	w.app = httptest.NewServer(r)
	t.Cleanup(w.app.Close)
	return w
}

func TestSlackRemindsDecidersByDirectMessage(t *testing.T) {
	t.Parallel()
	clk := &clock{now: time.Now()}
	w := clockWorld(t, clk)
	w.post(t, "/slack/events", "application/json", mentionEvent("Ev301", "1690000000.000001", "plan our daily research newspaper"))
	preview := w.slack.waitFor(t, "preview", isPreview)
	isDM := func(c call) bool {
		return c.Method == "chat.postMessage" && strings.HasPrefix(c.Form.Get("channel"), "U")
	}
	clk.Add(46 * time.Minute) // past three quarters of the test's hour
	dm := w.slack.waitFor(t, "a direct message", isDM)
	want := "Reminder: *Daily Research Newspaper* is waiting for your decision <https://example.slack.com/archives/C_NEWS/p" +
		strings.ReplaceAll(preview.TS, ".", "") + "|in <#C_NEWS>>; it expires in 14m."
	if !strings.Contains(dm.blocks(), want) {
		t.Fatalf("reminder = %s, want %q", dm.blocks(), want)
	}
	for deadline := time.Now().Add(10 * time.Second); w.slack.count(isDM) < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	got := map[string]int{}
	for _, c := range w.slack.snapshot() {
		if isDM(c) {
			got[c.Form.Get("channel")]++
		}
	}
	if len(got) != 2 || got["U_ALICE"] != 1 || got["U_ROOT"] != 1 {
		t.Fatalf("direct messages to %v, want one each to the requester and the Slack admin", got)
	}
	if n := w.slack.count(func(c call) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.blocks(), "Reminder") && c.Form.Get("channel") == "C_NEWS"
	}); n != 0 {
		t.Errorf("%d reminders in the channel too", n)
	}
}
