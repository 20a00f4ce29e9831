package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/planner/plannertest"
)

func isStatus(c call) bool { return c.Method == "assistant.threads.setStatus" }

func isPlaceholder(c call) bool {
	return c.Method == "chat.postMessage" && strings.Contains(c.Form.Get("metadata"), `"bobnet_draft"`)
}

// slowModel answers the newspaper plan after delay.
func slowModel(t *testing.T, w *world, delay time.Duration) {
	plan := plannertest.NewspaperPlan(t)
	w.env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply {
		return plannertest.Reply{Content: plan, Delay: delay}
	})
}

// Within a second of a mention's ack the thread says BobNet is planning,
// while the model still works: one status per request however often
// Slack delivers the event, and no placeholder where the status shows.
func TestPlanningStatusWithinASecondOfTheAck(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	slowModel(t, w, 2*time.Second)
	event := mentionEvent("EvS1", "1690000000.000101", "plan our daily research newspaper")
	if resp := w.post(t, "/slack/events", "application/json", event); resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	acked := time.Now()
	for i := 1; i <= 2; i++ {
		w.post(t, "/slack/events", "application/json", event, "X-Slack-Retry-Num", strconv.Itoa(i), "X-Slack-Retry-Reason", "http_timeout")
	}
	st := w.slack.waitFor(t, "thread status", isStatus)
	if d := st.At.Sub(acked); d > time.Second {
		t.Errorf("status %s after the ack", d)
	}
	if st.Form.Get("channel_id") != "C_NEWS" || st.Form.Get("thread_ts") != "1690000000.000101" || st.Form.Get("status") != "is planning…" {
		t.Errorf("status = %v", st.Form)
	}
	if n := w.slack.count(isPreview); n != 0 {
		t.Fatalf("the preview came before the model answered: %d", n)
	}
	preview := w.slack.waitFor(t, "preview", isPreview)
	if preview.At.Before(st.At) {
		t.Error("status after the preview")
	}
	w.env.WaitIdle(t)
	if n := w.slack.count(isStatus); n != 1 {
		t.Errorf("statuses = %d, want 1 for one request delivered three times", n)
	}
	if n := w.slack.count(method("chat.postMessage")); n != 1 {
		t.Errorf("messages = %d, want the preview alone", n)
	}
}

// refuseStatus has the stand-in Slack refuse every thread status, as a
// workspace without the scope does.
func refuseStatus(w *world) {
	w.slack.mu.Lock()
	w.slack.refuse = func(c call) string {
		if isStatus(c) {
			return "not_allowed_token_type"
		}
		return ""
	}
	w.slack.mu.Unlock()
}

// Where Slack refuses the status, a placeholder says BobNet is planning,
// and the preview replaces it: no message is left over, and the buttons
// of the preview (the placeholder's message) decide. The refusal is
// remembered for the workspace: the next mention goes straight to a
// placeholder.
func TestPlaceholderWhereTheStatusIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	slowModel(t, w, time.Second)
	refuseStatus(w)
	w.post(t, "/slack/events", "application/json", mentionEvent("EvP1", "1690000000.000201", "plan our daily research newspaper"))
	acked := time.Now()
	ph := w.slack.waitFor(t, "placeholder", isPlaceholder)
	if d := ph.At.Sub(acked); d > time.Second {
		t.Errorf("placeholder %s after the ack", d)
	}
	if ph.Form.Get("thread_ts") != "1690000000.000201" || !strings.Contains(ph.Form.Get("text"), "planning") {
		t.Errorf("placeholder = %v", ph.Form)
	}
	update := w.slack.waitFor(t, "preview in the placeholder", func(c call) bool {
		return c.Method == "chat.update" && c.Form.Get("ts") == ph.TS && strings.Contains(c.Form.Get("blocks"), "bobnet_approve")
	})
	if !strings.Contains(update.Form.Get("metadata"), "bobnet_preview") || !strings.Contains(update.Form.Get("blocks"), `"type":"plan"`) {
		t.Errorf("preview update = %v", update.Form)
	}
	w.env.WaitIdle(t)
	if n := w.slack.count(method("chat.postMessage")); n != 1 {
		t.Errorf("messages = %d, want the placeholder alone (the preview replaced it)", n)
	}
	// The preview's buttons are the placeholder's message's.
	pid := proposalID.FindStringSubmatch(update.Form.Get("blocks"))[1]
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_ALICE", "bobnet_approve", pid, ph.TS))
	w.slack.waitFor(t, "approved preview", func(c call) bool {
		return c.Method == "chat.update" && c.Form.Get("ts") == ph.TS && strings.Contains(c.blocks(), "Approved by <@U_ALICE>")
	})

	statuses := w.slack.count(isStatus)
	w.post(t, "/slack/events", "application/json", mentionEvent("EvP2", "1690000000.000202", "plan our daily research newspaper"))
	w.slack.waitFor(t, "second placeholder", func(c call) bool { return isPlaceholder(c) && c.Form.Get("thread_ts") == "1690000000.000202" })
	if n := w.slack.count(isStatus); n != statuses {
		t.Errorf("the refused status was asked again: %d calls, had %d", n, statuses)
	}
}

// The status is set again before Slack's two-minute timeout while the
// request is planned, and no more once it is answered.
func TestStatusRenewedWhilePlanning(t *testing.T) {
	t.Parallel()
	w := newWorldWith(t, func(c *slack.Config) { c.StatusEvery = time.Second })
	slowModel(t, w, 3500*time.Millisecond)
	w.post(t, "/slack/events", "application/json", mentionEvent("EvR1", "1690000000.000301", "plan our daily research newspaper"))
	w.slack.waitFor(t, "preview", isPreview)
	if n := w.slack.count(isStatus); n < 3 {
		t.Errorf("statuses = %d in 3.5 s of planning, want the first and at least 2 renewals", n)
	}
	answered := w.slack.count(isStatus)
	time.Sleep(2500 * time.Millisecond)
	if n := w.slack.count(isStatus); n != answered {
		t.Errorf("statuses went on after the answer: %d, then %d", answered, n)
	}
}

// A 429 on the status is waited out as Slack asks (Retry-After), and the
// status set then.
func TestStatusHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	slowModel(t, w, 3*time.Second)
	w.slack.mu.Lock()
	w.slack.limit = func(c call) time.Duration {
		if isStatus(c) && w.slack.count(isStatus) == 0 {
			return time.Second
		}
		return 0
	}
	w.slack.mu.Unlock()
	w.post(t, "/slack/events", "application/json", mentionEvent("EvT1", "1690000000.000311", "plan our daily research newspaper"))
	limited := w.slack.waitFor(t, "limited status", func(c call) bool { return isStatus(c) && c.Limited > 0 })
	set := w.slack.waitFor(t, "status", func(c call) bool { return isStatus(c) && c.Limited == 0 })
	if gap := set.At.Sub(limited.At); gap < 950*time.Millisecond {
		t.Errorf("status asked again %s after a 429 asking for 1 s", gap)
	}
	if n := w.slack.count(isPlaceholder); n != 0 {
		t.Errorf("%d placeholders: a 429 is no refusal", n)
	}
}

// A placeholder whose replica died between posting it and recording it
// (its ts lost) is found in the thread by its metadata and becomes the
// preview: no placeholder is left beside the answer.
func TestPlaceholderFoundWhenItsRecordIsLost(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	slowModel(t, w, time.Second)
	refuseStatus(w)
	w.post(t, "/slack/events", "application/json", mentionEvent("EvL1", "1690000000.000301", "plan our daily research newspaper"))
	ph := w.slack.waitFor(t, "placeholder", isPlaceholder)
	var md struct {
		Payload struct {
			Request string `json:"request_id"`
		} `json:"event_payload"`
	}
	if err := json.Unmarshal([]byte(ph.Form.Get("metadata")), &md); err != nil || md.Payload.Request == "" {
		t.Fatalf("placeholder metadata %q: %v", ph.Form.Get("metadata"), err)
	}
	// The placeholder's ts, as if its replica had died before writing it.
	ctx := context.Background()
	keys, err := w.env.Redis.Keys(ctx, w.env.Prefix+"*showing*"+md.Payload.Request+"*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("showing keys %v: %v", keys, err)
	}
	if err := w.env.Redis.HDel(ctx, keys[0], "ts").Err(); err != nil {
		t.Fatal(err)
	}
	w.slack.waitFor(t, "preview in the placeholder", func(c call) bool {
		return c.Method == "chat.update" && c.Form.Get("ts") == ph.TS && strings.Contains(c.Form.Get("blocks"), "bobnet_approve")
	})
	w.env.WaitIdle(t)
	if n := w.slack.count(method("chat.postMessage")); n != 1 {
		t.Errorf("messages = %d, want the placeholder alone (the preview replaced it)", n)
	}
}

// A burst of mentions in one workspace is shown thread statuses up to the
// workspace's budget (20 at once, 10 a second after), and past it nothing
// until the answer: no placeholder stands in for a status not asked for,
// and every mention is acknowledged as always.
func TestStatusesOfABurstStayWithinTheWorkspacesBudget(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const mentions = 40
	start := time.Now()
	for i := range mentions {
		ts := fmt.Sprintf("1690000000.%06d", 300+i)
		if resp := w.post(t, "/slack/events", "application/json", mentionEvent(fmt.Sprint("EvB", i), ts, "plan our daily research newspaper")); resp.StatusCode != http.StatusOK {
			t.Fatalf("mention %d: %d", i, resp.StatusCode)
		}
	}
	took := time.Since(start)
	w.env.WaitIdle(t)
	statuses := w.slack.count(isStatus)
	if most := 20 + int(took.Seconds()*10) + 1; statuses > most || statuses < 20 {
		t.Errorf("%d mentions in %s set %d thread statuses; want 20 to %d (the workspace's budget)", mentions, took, statuses, most)
	}
	if n := w.slack.count(isPlaceholder); n != 0 {
		t.Errorf("%d placeholders; want none (a status past the budget is not asked for, not refused)", n)
	}
}

// showingsAway is Memory whose showings Redis refuses for a while from
// the moment a placeholder's message is recorded, as when Redis restarts
// right after the placeholder went out.
type showingsAway struct {
	slack.Memory
	away   atomic.Bool
	fromTS sync.Once
	lasts  time.Duration
}

var errRedisAway = errors.New("redis: dial tcp: connect: connection refused")

func (m *showingsAway) ShowingSet(ctx context.Context, id board.RequestID, fields map[string]string, ttl time.Duration) error {
	if _, ok := fields["ts"]; ok {
		m.fromTS.Do(func() {
			m.away.Store(true)
			time.AfterFunc(m.lasts, func() { m.away.Store(false) })
		})
	}
	if m.away.Load() {
		return errRedisAway
	}
	return m.Memory.ShowingSet(ctx, id, fields, ttl)
}

func (m *showingsAway) ShowingClaim(ctx context.Context, id board.RequestID, field, value string, with map[string]string, ttl time.Duration) (bool, map[string]string, error) {
	if m.away.Load() {
		return false, nil, errRedisAway
	}
	return m.Memory.ShowingClaim(ctx, id, field, value, with, ttl)
}

func (m *showingsAway) Showing(ctx context.Context, id board.RequestID) (map[string]string, error) {
	if m.away.Load() {
		return nil, errRedisAway
	}
	return m.Memory.Showing(ctx, id)
}

// A placeholder whose ts Redis could not record, because Redis went away
// right after it was posted, still becomes the answer: the answer waits
// out a short absence of Redis and finds the placeholder by its
// metadata, or, past the wait, finds it in the thread all the same. No
// placeholder is left beside the preview (found by the soak: Redis
// restarted while a placeholder went out, and the preview was posted
// beside it).
func TestPlaceholderBecomesTheAnswerWhileRedisIsAway(t *testing.T) {
	t.Parallel()
	for _, away := range []time.Duration{1500 * time.Millisecond, 6 * time.Second} {
		t.Run(away.String(), func(t *testing.T) {
			t.Parallel()
			w := newWorldOf(t, nil, func(m slack.Memory) slack.Memory { return &showingsAway{Memory: m, lasts: away} })
			slowModel(t, w, time.Second)
			refuseStatus(w)
			w.post(t, "/slack/events", "application/json", mentionEvent("EvA1", "1690000000.000401", "plan our daily research newspaper"))
			ph := w.slack.waitFor(t, "placeholder", isPlaceholder)
			w.slack.waitFor(t, "preview in the placeholder", func(c call) bool {
				return c.Method == "chat.update" && c.Form.Get("ts") == ph.TS && strings.Contains(c.Form.Get("blocks"), "bobnet_approve")
			})
			w.env.WaitIdle(t)
			if err := w.ad.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := w.slack.count(method("chat.postMessage")); n != 1 {
				t.Errorf("messages = %d, want the placeholder alone (the preview replaced it)", n)
			}
			if n := w.slack.count(method("chat.delete")); n != 0 {
				t.Errorf("%d messages deleted; the placeholder is the preview", n)
			}
		})
	}
}

// A placeholder whose replica died while Slack took it (slow, and its ts
// never recorded) lands after the answer looked for it, and the answer
// is posted beside none: the answering replica looks once more, a call's
// timeout later, and takes the placeholder away (found by the soak).
func TestPlaceholderLandingAfterTheAnswerIsTakenAway(t *testing.T) {
	t.Parallel()
	w := newWorldOf(t, func(c *slack.Config) { c.Timeout = 6 * time.Second }, func(m slack.Memory) slack.Memory { return lostTS{m} })
	slowModel(t, w, time.Second)
	refuseStatus(w)
	w.slack.mu.Lock()
	w.slack.slow = func(c call) time.Duration {
		if isPlaceholder(c) {
			return 5 * time.Second
		}
		return 0
	}
	// The sweep's first delete fails: it is tried again.
	deletes := 0
	refuseStatuses := w.slack.refuse
	w.slack.refuse = func(c call) string {
		if c.Method == "chat.delete" {
			if deletes++; deletes == 1 {
				return "internal_error"
			}
		}
		return refuseStatuses(c)
	}
	w.slack.mu.Unlock()
	w.post(t, "/slack/events", "application/json", mentionEvent("EvS1", "1690000000.000501", "plan our daily research newspaper"))
	w.slack.waitFor(t, "preview", isPreview)
	ph := w.slack.waitFor(t, "placeholder", isPlaceholder)
	deleted := w.slack.waitFor(t, "the placeholder deleted", func(c call) bool { return c.Method == "chat.delete" && c.Refused == "" })
	if deleted.Form.Get("ts") != ph.TS {
		t.Errorf("deleted %s, want the placeholder %s", deleted.Form.Get("ts"), ph.TS)
	}
	if n := w.slack.count(method("chat.delete")); n != 2 {
		t.Errorf("%d deletes, want the placeholder's twice (the first refused)", n)
	}
}

// An answer that found no placeholder and then failed to post leaves
// nothing to sweep: the next attempt, which finds the placeholder and
// writes the answer into it, keeps it. Only an answer that was posted
// beside no placeholder looks again.
func TestFailedAnswerSweepsNothing(t *testing.T) {
	t.Parallel()
	fs := newFakeSlack(t)
	replies, previews := 0, 0
	fs.mu.Lock()
	fs.refuse = func(c call) string {
		switch {
		case isStatus(c):
			return "not_allowed_token_type"
		case c.Method == "conversations.replies":
			if replies++; replies <= 2 {
				return "internal_error"
			}
		case isPreview(c):
			if previews++; previews == 1 {
				return "internal_error"
			}
		}
		return ""
	}
	fs.mu.Unlock()
	env := bottest.New(t)
	timeout := 2 * time.Second
	ad := adapterOn(t, context.Background(), fs, env, lostTS{redisstore.NewInFlight(env.Redis, env.Prefix)}, timeout)
	th := slackThread("C_SWEEP", "1690000000.000931")
	p := newspaperProposal(t, bot.NewRequestID(), th)
	ad.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
	ph := fs.waitFor(t, "placeholder", isPlaceholder)
	if _, err := ad.PostPreview(context.Background(), p); err == nil {
		t.Fatal("the first answer was posted; want it refused")
	}
	ts, err := ad.PostPreview(context.Background(), p)
	if err != nil || string(ts) != ph.TS {
		t.Fatalf("second answer: message %s, %v; want the placeholder %s", ts, err, ph.TS)
	}
	time.Sleep(timeout + time.Second)
	if err := ad.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := fs.count(method("chat.delete")); n != 0 {
		t.Errorf("%d messages deleted; the placeholder is the answer", n)
	}
}

// A replica that stops before its sweep's time looks at once instead of
// not at all: a placeholder that has landed by then (its replica died
// with its ts unrecorded) is taken away.
func TestSweepLooksAtOnceWhenItsReplicaStops(t *testing.T) {
	t.Parallel()
	fs := latePlaceholders(t, 5*time.Second) // past the answer's wait for them
	env := bottest.New(t)
	work, stop := context.WithCancel(context.Background())
	defer stop()
	ad := adapterOn(t, work, fs, env, lostTS{redisstore.NewInFlight(env.Redis, env.Prefix)}, 30*time.Second)
	th := slackThread("C_STOPSWEEP", "1690000000.000941")
	p := newspaperProposal(t, bot.NewRequestID(), th)
	ad.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
	fs.waitFor(t, "the status refused", isStatus)
	time.Sleep(300 * time.Millisecond) // the placeholder on its way
	ts, err := ad.PostPreview(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	ph := fs.waitFor(t, "placeholder", isPlaceholder)
	if string(ts) == ph.TS {
		t.Fatalf("the preview is the placeholder %s; want it posted beside", ts)
	}
	stopped := time.Now()
	stop()
	deleted := fs.waitFor(t, "the placeholder deleted", method("chat.delete"))
	if deleted.Form.Get("ts") != ph.TS {
		t.Errorf("deleted %s, want the placeholder %s", deleted.Form.Get("ts"), ph.TS)
	}
	if after := deleted.At.Sub(stopped); after > 5*time.Second {
		t.Errorf("deleted %s after the stop; want at once, not at the sweep's time (30 s)", after)
	}
	if err := ad.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
