package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

func mentionFrom(eventID, user, channel, ts, text string) string {
	b, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T1", "event_id": eventID,
		"event": map[string]any{"type": "app_mention", "user": user, "text": "<@UBOBNET> " + text, "ts": ts, "channel": channel},
	})
	return string(b)
}

// flood posts n signed mentions, 16 at a time, and fails on any status
// but 200.
func flood(t *testing.T, w *world, n int, event func(i int) string) {
	t.Helper()
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if resp := w.post(t, "/slack/events", "application/json", event(i)); resp.StatusCode != http.StatusOK {
					t.Errorf("event %d: %d", i, resp.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
}

func method(m string) func(call) bool { return func(c call) bool { return c.Method == m } }

// A flood into a channel does not become a flood out of it: 1,000
// throttled mentions from one person tell that person once, privately.
func TestFloodFromOnePersonIsToldOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bottest.WithConfig(func(c *bot.Config) { c.UserRate = board.RateLimit{N: 2, Per: time.Hour} }))
	flood(t, w, 1000, func(i int) string {
		return mentionFrom(fmt.Sprint("EvF", i), "U_SPAM", "C_NEWS", fmt.Sprintf("1690000001.%06d", i), "plan something")
	})
	w.env.WaitIdle(t)
	w.slack.waitFor(t, "the slow-down notice", method("chat.postEphemeral"))
	if n := w.slack.count(method("chat.postEphemeral")); n != 1 {
		t.Errorf("ephemerals = %d, want 1", n)
	}
	if n := w.slack.count(isPreview); n != 2 {
		t.Errorf("previews = %d, want the 2 allowed", n)
	}
	if n := w.slack.count(method("assistant.threads.setStatus")); n != 2 {
		t.Errorf("thread statuses = %d, want one for each of the 2 requests", n)
	}
	if n := len(w.slack.snapshot()); n != 5 {
		t.Errorf("Web API calls = %d, want 5", n)
	}
}

// 1,000 people in one channel: the channel's limit holds, and only a
// handful of them are told.
func TestFloodFromManyPeopleIsToldAFew(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bottest.WithConfig(func(c *bot.Config) {
		c.ChannelRate = board.RateLimit{N: 3, Per: time.Hour}
		c.UserRate = board.RateLimit{N: 5, Per: time.Hour}
	}))
	flood(t, w, 1000, func(i int) string {
		return mentionFrom(fmt.Sprint("EvM", i), fmt.Sprint("U_", i), "C_BUSY", fmt.Sprintf("1690000002.%06d", i), "plan something")
	})
	w.env.WaitIdle(t)
	w.slack.waitFor(t, "notices", method("chat.postEphemeral"))
	// The notices go out after the acks; wait until five have, then make
	// sure no more follow once the queue is drained.
	deadline := time.Now().Add(10 * time.Second)
	for w.slack.count(method("chat.postEphemeral")) < 5 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := w.slack.count(method("chat.postEphemeral")); n != 5 {
		t.Errorf("ephemerals = %d, want the cap of 5", n)
	}
	if n := w.slack.count(isPreview); n != 3 {
		t.Errorf("previews = %d, want the 3 the channel allows", n)
	}
	if n := w.slack.count(method("assistant.threads.setStatus")); n != 3 {
		t.Errorf("thread statuses = %d, want one for each of the 3 requests", n)
	}
	if n := len(w.slack.snapshot()); n > 11 {
		t.Errorf("Web API calls = %d, want at most 11 for 1,000 events", n)
	}
}

// failOnce is the real engine whose first Submit fails as if Redis blinked.
type failOnce struct {
	*bot.Engine
	failed atomic.Bool
}

func (f *failOnce) Submit(ctx context.Context, r board.Request) (board.RequestID, error) {
	if f.failed.CompareAndSwap(false, true) {
		return "", fmt.Errorf("%w: redis: connection reset", bot.ErrUnavailable)
	}
	return f.Engine.Submit(ctx, r)
}

// A mention whose first delivery failed is not lost: Slack's retry goes
// through, and makes one request.
func TestFailedSubmitThenRetryMakesOneRequest(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ad, err := slack.New(context.Background(), slack.Config{BotToken: "xoxb-test", SigningSecret: secret, APIURL: w.slack.srv.URL + "/api/"},
		&failOnce{Engine: w.env.Engine}, redisstore.NewInFlight(w.env.Redis, w.env.Prefix), storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	ad.Routes(r)
	w.serve(r)
	event := mentionEvent("EvLost", "1690000003.000001", "plan our daily research newspaper")
	if resp := w.post(t, "/slack/events", "application/json", event); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("first delivery: %d, want 503 so Slack retries", resp.StatusCode)
	}
	for i := 1; i <= 2; i++ {
		if resp := w.post(t, "/slack/events", "application/json", event, "X-Slack-Retry-Num", strconv.Itoa(i)); resp.StatusCode != http.StatusOK {
			t.Fatalf("retry %d: %d", i, resp.StatusCode)
		}
	}
	w.slack.waitFor(t, "preview", isPreview)
	w.env.WaitIdle(t)
	if n := w.slack.count(isPreview); n != 1 {
		t.Fatalf("previews = %d, want 1", n)
	}
	if n := count(t, w, "SELECT count(*) FROM proposals"); n != 1 {
		t.Fatalf("proposals = %d, want 1", n)
	}
}

// A stalled Slack API delays only the messages to it: acks stay fast
// (help and throttled mentions included) and other channels are still
// planned and answered.
func TestStalledSlackDelaysOnlyItsChannel(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bottest.WithConfig(func(c *bot.Config) {
		c.PostTimeout = time.Minute
		c.UserRate = board.RateLimit{N: 6, Per: time.Hour}
	}))
	w.slack.mu.Lock()
	w.slack.stall = func(c call) bool { return c.Form.Get("channel") == "C_STALL" }
	w.slack.mu.Unlock()
	ad, err := slack.New(context.Background(), slack.Config{BotToken: "xoxb-test", SigningSecret: secret, APIURL: w.slack.srv.URL + "/api/", Timeout: time.Minute},
		w.env.Engine, redisstore.NewInFlight(w.env.Redis, w.env.Prefix), storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	w.env.Engine.Register(board.SourceSlack, bot.Registration{Poster: ad, Notifier: ad, Reminders: ad, Groups: ad})
	r := chi.NewRouter()
	ad.Routes(r)
	w.serve(r)

	ack := func(body string) {
		t.Helper()
		start := time.Now()
		if resp := w.post(t, "/slack/events", "application/json", body); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("ack took %s, over Slack's 3 s", d)
		}
	}
	// More stalled requests than the engine has workers, then a help
	// mention and throttled ones there too.
	for i := range 6 {
		ack(mentionFrom(fmt.Sprint("EvS", i), "U_ALICE", "C_STALL", fmt.Sprintf("1690000004.%06d", i), "plan something"))
	}
	ack(mentionFrom("EvHelp", "U_BOB", "C_STALL", "1690000004.100000", ""))
	for i := range 3 {
		ack(mentionFrom(fmt.Sprint("EvT", i), "U_ALICE", "C_STALL", fmt.Sprintf("1690000004.2%05d", i), "plan more"))
	}
	// Another channel is planned and answered meanwhile.
	ack(mentionFrom("EvOK", "U_CAROL", "C_OK", "1690000005.000001", "plan our daily research newspaper"))
	w.slack.waitFor(t, "the other channel's preview", func(c call) bool { return isPreview(c) && c.Form.Get("channel") == "C_OK" })
	w.slack.mu.Lock()
	stalled := w.slack.stalled
	w.slack.mu.Unlock()
	if stalled == 0 {
		t.Fatal("nothing was stalled: the test proves nothing")
	}
	// The stalled channel's requests are planned too (their previews wait
	// for Slack, not the workers).
	for end := time.Now().Add(20 * time.Second); len(w.env.Model.Requests()) < 7; {
		if time.Now().After(end) {
			t.Fatalf("model calls = %d; the stalled channel's requests should be planned too", len(w.env.Model.Requests()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The fallback text of every message is escaped like its blocks: a model
// answer or board name with <!channel> or a link pings nobody and links
// nowhere, in the preview and in the approval reply.
func TestFallbackTextIsEscaped(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var plan map[string]any
	_ = json.Unmarshal([]byte(plannertest.NewspaperPlan(t)), &plan)
	plan["answer"] = "Done <!channel> <https://evil.example|click> @here"
	plan["actions"].([]any)[0].(map[string]any)["board"].(map[string]any)["name"] = "<!here> <https://evil.example|Board>"
	hostile, _ := json.Marshal(plan)
	w.env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply {
		return plannertest.Reply{Content: string(hostile)}
	})
	w.post(t, "/slack/events", "application/json", mentionEvent("EvX", "1690000006.000001", "plan it"))
	preview := w.slack.waitFor(t, "preview", isPreview)
	pid := proposalID.FindStringSubmatch(preview.Form.Get("blocks"))[1]
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_ALICE", "bobnet_approve", pid, preview.TS))
	w.slack.waitFor(t, "approval reply", func(c call) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.Form.Get("text"), "Approved by")
	})
	for _, c := range w.slack.snapshot() {
		text := c.Form.Get("text")
		for _, bad := range []string{"<!channel>", "<!here>", "<https://evil", "@here"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s text carries %q: %s", c.Method, bad, text)
			}
		}
	}
}

// A signed slash command replayed within the signature window is one
// request.
func TestSlashCommandReplayIsOneRequest(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	body := url.Values{"command": {"/bobnet"}, "text": {"plan our daily research newspaper"}, "channel_id": {"C_NEWS"}, "user_id": {"U_ALICE"}, "trigger_id": {"13345224609.738474920.8088930838d88f008e0"}}.Encode()
	for i := range 3 {
		if resp := w.post(t, "/slack/commands", "application/x-www-form-urlencoded", body); resp.StatusCode != http.StatusOK {
			t.Fatalf("replay %d: %d", i, resp.StatusCode)
		}
	}
	w.slack.waitFor(t, "preview", isPreview)
	w.env.WaitIdle(t)
	asked := w.slack.count(func(c call) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.Form.Get("text"), "asked BobNet")
	})
	if asked != 1 || w.slack.count(isPreview) != 1 || len(w.env.Model.Requests()) != 1 {
		t.Fatalf("asked = %d, previews = %d, model calls = %d; want one each", asked, w.slack.count(isPreview), len(w.env.Model.Requests()))
	}
}

// A slash command's escaped mentions are stripped from its request as a
// mention's are, not shown as markup.
func TestSlashPlanStripsMentions(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	body := url.Values{"command": {"/bobnet"}, "text": {"plan our daily research newspaper <@U0BOB|bob> <@U0ANN>"}, "channel_id": {"C_NEWS"},
		"user_id": {"U_ALICE"}, "trigger_id": {"13345224609.738474920.8088930838d88f008e1"}}.Encode()
	w.post(t, "/slack/commands", "application/x-www-form-urlencoded", body)
	asked := w.slack.waitFor(t, "the request posted", func(c call) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.Form.Get("text"), "asked BobNet")
	})
	if got := asked.Form.Get("text"); got != "<@U_ALICE> asked BobNet: our daily research newspaper" {
		t.Errorf("request posted as %q", got)
	}
}

// A click payload naming another channel does not decide this channel's
// proposal.
func TestClickFromAnotherChannelIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.post(t, "/slack/events", "application/json", mentionEvent("EvC", "1690000007.000001", "plan our daily research newspaper"))
	preview := w.slack.waitFor(t, "preview", isPreview)
	pid := proposalID.FindStringSubmatch(preview.Form.Get("blocks"))[1]
	other := strings.ReplaceAll(blockAction("U_ALICE", "bobnet_approve", pid, preview.TS), "C_NEWS", "C_OTHER")
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", other)
	eph := w.slack.waitFor(t, "refusal", method("chat.postEphemeral"))
	if !strings.Contains(eph.Form.Get("text"), "does not belong") {
		t.Fatalf("refusal = %v", eph.Form)
	}
	// The same click from another message of this channel is refused too,
	// once the preview's message is recorded (until then, a moment after
	// its post, only the channel is checked: clickedWhereProposed).
	for deadline := time.Now().Add(5 * time.Second); ; {
		p, err := w.env.Engine.Proposal(context.Background(), board.ProposalID(pid))
		if err == nil && p.Message != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the preview's message was not recorded: %+v, %v", p.Message, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_ALICE", "bobnet_approve", pid, "1690000099.000001"))
	w.slack.waitFor(t, "second refusal", func(c call) bool {
		return c.Method == "chat.postEphemeral" && c.TS != eph.TS
	})
	if n := count(t, w, "SELECT count(*) FROM boards"); n != 0 {
		t.Fatalf("boards = %d, want 0", n)
	}
	p, err := w.env.Engine.Proposal(context.Background(), board.ProposalID(pid))
	if err != nil || p.State != board.ProposalPending {
		t.Fatalf("proposal = %s, %v", p.State, err)
	}
}
