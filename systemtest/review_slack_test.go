package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/signing"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// reviewCall is one Web API call the review stand-in saw.
type reviewCall struct {
	Method string
	Form   url.Values
	JSON   map[string]any
	TS     string // the ts a chat.postMessage was answered with
}

// reviewSlack stands in for Slack's Web API: it records every call, form
// or JSON, and gives each posted message a ts of its own.
type reviewSlack struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []reviewCall
	n     int
}

func newReviewSlack(t *testing.T) *reviewSlack {
	s := &reviewSlack{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := reviewCall{Method: strings.TrimPrefix(r.URL.Path, "/api/")}
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			body, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(body, &c.JSON)
		} else {
			_ = r.ParseForm()
			c.Form = r.PostForm
		}
		s.mu.Lock()
		s.n++
		c.TS = fmt.Sprintf("1700000001.%06d", s.n)
		s.calls = append(s.calls, c)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"ok":true,"channel":"C_NEWS","ts":%q}`, c.TS)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *reviewSlack) matching(match func(reviewCall) bool) []reviewCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []reviewCall
	for _, c := range s.calls {
		if match(c) {
			out = append(out, c)
		}
	}
	return out
}

func (s *reviewSlack) waitFor(t *testing.T, what string, match func(reviewCall) bool) reviewCall {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if got := s.matching(match); len(got) > 0 {
			return got[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s", what)
	return reviewCall{}
}

// signedSlack posts a signed body to one of the Slack endpoints.
func signedSlack(t *testing.T, a *testApp, path, contentType, body string) (int, string) {
	t.Helper()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequest("POST", a.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", signing.SlackSignature("shh", ts, []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// click is a signed block_actions payload: user clicks action (with
// value) on message in channel.
func click(t *testing.T, a *testApp, user, channel, action, value, message string) {
	t.Helper()
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "trigger_id": "T-" + user + "-" + action, "user": map[string]any{"id": user},
		"channel":   map[string]any{"id": channel},
		"container": map[string]any{"type": "message", "message_ts": message, "channel_id": channel, "thread_ts": "1700000000.000001"},
		"message":   map[string]any{"ts": message, "thread_ts": "1700000000.000001"},
		"actions":   []map[string]any{{"action_id": action, "block_id": "b", "type": "button", "value": value, "action_ts": "1"}},
	})
	if code, body := signedSlack(t, a, "/slack/interactivity", "application/x-www-form-urlencoded", "payload="+url.QueryEscape(string(payload))); code != http.StatusOK {
		t.Fatalf("click %s: %d %s", action, code, body)
	}
}

var (
	previewApprove = regexp.MustCompile(`"action_id":"bobnet_approve","value":"(p_[a-z0-9]+)"`)
	reviewButton   = regexp.MustCompile(`"action_id":"bobnet_review_accept","value":"([^"]+)"`)
)

const reviewPolicy = `
default: {deciders: [requester, admins], approvals: 1, self_approval: true}
channels:
  "slack:C_NEWS":
    deciders: [U_ALICE, U_BOB]
    approvals: 1
    self_approval: false
`

// TestSlackReviewButtons: a board planned in Slack runs; each researcher's
// card reaching Review is announced in the thread with Accept and Send
// back. The run's starter is refused under self_approval: false, a click
// from another channel decides nothing, two Accepts at once make one
// decision and one redraw, and Send back opens a modal whose reason is
// required and goes to the card.
func TestSlackReviewButtons(t *testing.T) {
	t.Parallel()
	sink := newReviewSlack(t)
	policy := filepath.Join(t.TempDir(), "policies.yaml")
	if err := os.WriteFile(policy, []byte(reviewPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	a := start(t, withEnv(map[string]string{
		"BOBNET_API_TOKEN": "test-token", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "shh", "SLACK_API_URL": sink.srv.URL + "/api/",
		"BOBNET_POLICY_FILE": policy,
	}))
	ctx := context.Background()
	store, err := store.Open(ctx, a.DB, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	// Alice asks in #news; Bob approves (her own approval does not count).
	mention, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T1", "event_id": "Ev1",
		"event": map[string]any{"type": "app_mention", "user": "U_ALICE", "text": "<@UBOBNET> plan our daily research newspaper", "ts": "1700000000.000001", "channel": "C_NEWS"},
	})
	if code, body := signedSlack(t, a, "/slack/events", "application/json", string(mention)); code != http.StatusOK {
		t.Fatalf("mention: %d %s", code, body)
	}
	preview := sink.waitFor(t, "preview", func(c reviewCall) bool { return previewApprove.MatchString(c.Form.Get("blocks")) })
	pid := previewApprove.FindStringSubmatch(preview.Form.Get("blocks"))[1]
	var approved struct {
		BoardID board.ID `json:"board_id"`
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+pid+"/approve", map[string]string{"user": "U_BOB"}, &approved); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	if got := slashCommand(t, a, "U_ALICE", "run"); !strings.Contains(got, "Run 1 started") {
		t.Fatalf("/bobnet run: %q", got)
	}

	// The first card (the editor's plan, which the researchers wait on)
	// is announced with buttons in the board's thread.
	announced := func(c reviewCall) bool {
		return c.Method == "chat.postMessage" && reviewButton.MatchString(c.Form.Get("blocks"))
	}
	first := sink.waitFor(t, "announcement", announced)
	if first.Form.Get("thread_ts") != "1700000000.000001" || !strings.Contains(first.Form.Get("blocks"), "bobnet_review_sendback") {
		t.Fatalf("announcement: thread %q blocks %s", first.Form.Get("thread_ts"), first.Form.Get("blocks"))
	}
	value1 := reviewButton.FindStringSubmatch(first.Form.Get("blocks"))[1]
	runID, err := board.ParseRunID(strings.Fields(value1)[0])
	if err != nil {
		t.Fatal(err)
	}
	card := board.CardID(strings.Fields(value1)[1])
	cardOf := func() board.RunCard {
		r, err := store.Run(ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Cards {
			if c.Card == card {
				return c
			}
		}
		t.Fatalf("card %s not in the run", card)
		return board.RunCard{}
	}
	ephemeralTo := func(user, text string) func(reviewCall) bool {
		return func(c reviewCall) bool {
			return c.Method == "chat.postEphemeral" && c.Form.Get("user") == user && strings.Contains(c.Form.Get("text"), text)
		}
	}
	redrawn := func(ts string) func(reviewCall) bool {
		return func(c reviewCall) bool { return c.Method == "chat.update" && c.Form.Get("ts") == ts }
	}

	// The run's starter may not accept her own run's work, nor send it
	// back; a payload naming another channel decides nothing.
	click(t, a, "U_ALICE", "C_NEWS", "bobnet_review_accept", value1, first.TS)
	sink.waitFor(t, "refusal of the starter", ephemeralTo("U_ALICE", "can't review"))
	click(t, a, "U_ALICE", "C_NEWS", "bobnet_review_sendback", value1, first.TS)
	click(t, a, "U_BOB", "C_OTHER", "bobnet_review_accept", value1, first.TS)
	sink.waitFor(t, "refusal from another channel", ephemeralTo("U_BOB", "does not belong"))
	if n := len(sink.matching(ephemeralTo("U_ALICE", "can't review"))); n != 2 {
		t.Errorf("the starter's two clicks were refused %d times", n)
	}
	if len(sink.matching(func(c reviewCall) bool { return c.Method == "views.open" })) != 0 {
		t.Error("a modal opened for someone who may not review")
	}
	if st := cardOf().Status; st != "Review" {
		t.Fatalf("refused clicks moved the card to %s", st)
	}

	// Send back: the modal opens; an empty or too long reason is a field
	// error; the reason goes to the card, which is worked again.
	click(t, a, "U_BOB", "C_NEWS", "bobnet_review_sendback", value1, first.TS)
	open := sink.waitFor(t, "views.open", func(c reviewCall) bool { return c.Method == "views.open" })
	if open.JSON["trigger_id"] != "T-U_BOB-bobnet_review_sendback" {
		t.Fatalf("views.open: %v", open.JSON)
	}
	view := open.JSON["view"].(map[string]any)
	submit := func(reason string) (int, string) {
		payload, _ := json.Marshal(map[string]any{
			"type": "view_submission", "user": map[string]any{"id": "U_BOB"},
			"view": map[string]any{"id": "V1", "callback_id": view["callback_id"], "private_metadata": view["private_metadata"],
				"state": map[string]any{"values": map[string]any{"sendback_reason": map[string]any{"sendback_reason_input": map[string]any{"type": "plain_text_input", "value": reason}}}}},
		})
		return signedSlack(t, a, "/slack/interactivity", "application/x-www-form-urlencoded", "payload="+url.QueryEscape(string(payload)))
	}
	for _, bad := range []string{"  ", strings.Repeat("x", 1001)} {
		if code, body := submit(bad); code != http.StatusOK || !strings.Contains(body, `"response_action":"errors"`) || !strings.Contains(body, `"sendback_reason":`) {
			t.Errorf("reason of %d characters: %d %s", len(bad), code, body)
		}
	}
	if cardOf().Rounds != 0 {
		t.Fatal("a refused reason sent the card back")
	}
	if code, body := submit("cite the sources"); code != http.StatusOK || strings.TrimSpace(body) != "" {
		t.Fatalf("submission: %d %s", code, body)
	}
	if c := cardOf(); c.Rounds != 1 || c.Feedback != "cite the sources" {
		t.Fatalf("sent back card: rounds %d feedback %q", c.Rounds, c.Feedback)
	}
	sink.waitFor(t, "redraw of the sent back card", func(c reviewCall) bool {
		return redrawn(first.TS)(c) && strings.Contains(c.Form.Get("blocks"), "cite the sources") && !strings.Contains(c.Form.Get("blocks"), "bobnet_review_accept")
	})
	// The model worked it again with the reason.
	again := sink.waitFor(t, "second announcement", func(c reviewCall) bool {
		return announced(c) && strings.Contains(c.Form.Get("blocks"), string(card)+" 1")
	})
	sawReason := false
	for _, r := range a.Model.Requests() {
		for _, m := range r.Messages {
			sawReason = sawReason || strings.Contains(m.Content, "cite the sources")
		}
	}
	if !sawReason {
		t.Error("the model never saw the reason")
	}
	// The first announcement's buttons decide nothing now.
	click(t, a, "U_BOB", "C_NEWS", "bobnet_review_accept", value1, first.TS)
	sink.waitFor(t, "refusal of a stale button", ephemeralTo("U_BOB", "earlier output"))

	// Two Accepts at once: one decision, one redraw.
	value2 := reviewButton.FindStringSubmatch(again.Form.Get("blocks"))[1]
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			click(t, a, "U_BOB", "C_NEWS", "bobnet_review_accept", value2, again.TS)
		}()
	}
	wg.Wait()
	update := sink.waitFor(t, "redraw", redrawn(again.TS))
	if blocks := update.Form.Get("blocks"); !strings.Contains(blocks, "accepted by \\u003c@U_BOB\\u003e") && !strings.Contains(blocks, "accepted by <@U_BOB>") {
		t.Errorf("redraw: %s", blocks)
	}
	if strings.Contains(update.Form.Get("blocks"), "bobnet_review_accept") {
		t.Errorf("redraw keeps the buttons: %s", update.Form.Get("blocks"))
	}
	sink.waitFor(t, "refusal of the second click", ephemeralTo("U_BOB", "can't be reviewed now"))
	if st := cardOf().Status; st != "Done" {
		t.Fatalf("accepted card is %s", st)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(sink.matching(redrawn(again.TS))); n != 1 {
		t.Errorf("%d redraws of one decision", n)
	}
	var accepts int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'run_card_reviewed' AND detail->>'accepted' = 'true'`).Scan(&accepts); err != nil {
		t.Fatal(err)
	}
	if accepts != 1 {
		t.Errorf("%d accepts recorded, want 1", accepts)
	}
}
