package slack_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// newspaperProposal is the newspaper plan proposed for request id in t.
func newspaperProposal(t *testing.T, id board.RequestID, th board.Thread) board.Proposal {
	t.Helper()
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{Profiles: []string{"Coder", "Planner", "Researcher", "Reviewer"}})
	if !res.Valid {
		t.Fatal(res.Errors)
	}
	return board.Proposal{ID: board.ProposalIDFor(id), RequestID: id, Version: 1, RequestedBy: "U_ALICE", Thread: th,
		Plan: *res.Plan, Warnings: res.Warnings, State: board.ProposalPending, ExpiresAt: time.Now().Add(time.Hour)}
}

// drafter is what these tests drive directly: the adapter as the engine
// sees it while it plans.
type drafter interface {
	bot.Drafter
	bot.Poster
}

// streamCards gives d the newspaper plan's cards one by one, spread over
// span, as a model streaming it would; it checks each Draft returns at
// once.
func streamCards(t *testing.T, d drafter, p board.Proposal, span time.Duration) {
	t.Helper()
	cards := p.Plan.Actions[0].Cards
	for i := range cards {
		start := time.Now()
		if err := d.Draft(context.Background(), bot.Draft{Request: p.RequestID, Thread: p.Thread, Title: p.Plan.NewBoard().Name, Cards: cards[:i+1]}); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 100*time.Millisecond {
			t.Errorf("Draft held the worker %s", took)
		}
		time.Sleep(span / time.Duration(len(cards)))
	}
}

func slackThread(channel, ts string) board.Thread {
	return board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: channel}, ID: ts}
}

// chunks are a stream call's chunks.
func (c call) chunks(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	if s := c.Form.Get("chunks"); s != "" {
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			t.Fatalf("chunks of %s: %v", c.Method, err)
		}
	}
	return out
}

func isStream(c call) bool {
	return strings.HasPrefix(c.Method, "chat.") && strings.HasSuffix(c.Method, "Stream")
}

// inThread says whether c is about thread ts's draft (a stream or a
// message of the thread, or an update of one of them).
func inThread(calls []call, thread string) func(call) bool {
	msgs := map[string]bool{}
	for _, c := range calls {
		if c.Form.Get("thread_ts") == thread {
			msgs[c.TS] = true
		}
	}
	return func(c call) bool {
		return c.Form.Get("thread_ts") == thread || (c.Form.Get("ts") != "" && msgs[c.Form.Get("ts")])
	}
}

// paceOf fails when calls that show work in progress came faster than
// one a second. The answer (a stream's stop, or the update carrying the
// preview) is not one of them: it goes at once.
//
// The stand-in notes when a call arrives, not when it was sent, and a
// call slowed on its way comes closer to the next (626 ms after it once,
// under the race detector on a busy machine). So each call is held to its
// place in the sequence instead: k calls after another arrive at least k
// seconds after it, less paceSlack for the one that came late. Two calls
// at once fail, and so does a pace of one every 0.6 s.
func paceOf(t *testing.T, calls []call) {
	t.Helper()
	const paceSlack = 500 * time.Millisecond
	var progress []call
	for _, c := range calls {
		if c.Method != "chat.stopStream" && !strings.Contains(c.Form.Get("blocks"), "bobnet_approve") {
			progress = append(progress, c)
		}
	}
	for i := range progress {
		for j := i + 1; j < len(progress); j++ {
			if span := progress[j].At.Sub(progress[i].At); span < time.Duration(j-i)*time.Second-paceSlack {
				t.Errorf("%s %s after %s, %d calls later: more than one call a second in the thread", progress[j].Method, span, progress[i].Method, j-i)
			}
		}
	}
}

// The newspaper plan streamed by the model over 3 s shows card by card:
// one stream (chat.startStream with the tasks as a plan, recipient the
// asker), task_update chunks for new cards at most once a second, and
// chat.stopStream carrying the validated preview: a plan of 10 pending
// task cards with their handles, and the buttons.
func TestDraftStreamedCardByCard(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	th := slackThread("C_NEWS", "1690000000.000401")
	p := newspaperProposal(t, bot.NewRequestID(), th)
	w.ad.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
	w.slack.waitFor(t, "status", isStatus)
	streamCards(t, w.ad, p, 3*time.Second)
	ts, err := w.ad.PostPreview(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}

	start := w.slack.waitFor(t, "stream start", method("chat.startStream"))
	if start.Form.Get("thread_ts") != th.ID || start.Form.Get("channel") != "C_NEWS" || start.Form.Get("task_display_mode") != "plan" ||
		start.Form.Get("recipient_user_id") != "U_ALICE" || start.Form.Get("recipient_team_id") != "T1" {
		t.Errorf("start = %v", start.Form)
	}
	if string(ts) != start.TS {
		t.Errorf("the preview is message %s, the stream %s", ts, start.TS)
	}
	shown := map[string]bool{}
	for _, c := range w.slack.snapshot() {
		if c.Method != "chat.startStream" && c.Method != "chat.appendStream" {
			continue
		}
		for _, ch := range c.chunks(t) {
			if ch["type"] == "task_update" {
				shown[ch["id"].(string)] = true
				if ch["status"] != "pending" || !strings.Contains(ch["details"].(string), "Draft") {
					t.Errorf("draft task %v is not a pending draft", ch)
				}
			}
		}
	}
	if len(shown) < 3 {
		t.Errorf("%d cards shown while drafting, want them shown as they come", len(shown))
	}
	stop := w.slack.waitFor(t, "stream stop", method("chat.stopStream"))
	if stop.Form.Get("ts") != start.TS || !strings.Contains(stop.Form.Get("metadata"), "bobnet_preview") ||
		!strings.Contains(stop.Form.Get("blocks"), "bobnet_approve") || !strings.Contains(stop.Form.Get("blocks"), "bobnet_cancel") {
		t.Errorf("stop = %v", stop.Form)
	}
	tasks := 0
	for _, ch := range stop.chunks(t) {
		switch ch["type"] {
		case "plan_update":
			if ch["title"] != "Daily Research Newspaper" {
				t.Errorf("plan title %v", ch["title"])
			}
		case "task_update":
			tasks++
			if ch["status"] != "pending" || !strings.HasPrefix(ch["title"].(string), "NEWS-") || !strings.Contains(ch["details"].(string), "Assignee: ") {
				t.Errorf("validated task %v", ch)
			}
		}
	}
	if tasks != 10 {
		t.Errorf("stop settles %d tasks, want the 10 cards", tasks)
	}
	calls := w.slack.snapshot()
	var drafting []call
	for _, c := range calls {
		if isStream(c) {
			drafting = append(drafting, c)
		}
	}
	paceOf(t, drafting)
	if n := w.slack.count(method("chat.postMessage")); n != 0 {
		t.Errorf("%d messages posted besides the stream", n)
	}
	last := w.slack.waitForLatest(t, "status", isStatus)
	if last.Form.Get("status") != "" {
		t.Errorf("the status was not cleared after the answer: %v", last.Form)
	}
}

// Where Slack refuses chat.startStream, the draft is a message posted
// once and redrawn (chat.update), the preview its last redraw; the
// refusal is remembered for the workspace, so the next request's draft
// does not ask for a stream again.
func TestDraftFallsBackWhereStreamingIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.slack.mu.Lock()
	w.slack.refuse = func(c call) string {
		if c.Method == "chat.startStream" {
			return "not_allowed_token_type"
		}
		return ""
	}
	w.slack.mu.Unlock()
	for i, thread := range []string{"1690000000.000501", "1690000000.000502"} {
		th := slackThread("C_NEWS", thread)
		p := newspaperProposal(t, bot.NewRequestID(), th)
		w.ad.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
		w.slack.waitFor(t, "status", func(c call) bool { return isStatus(c) && c.Form.Get("thread_ts") == thread })
		streamCards(t, w.ad, p, 3*time.Second)
		ts, err := w.ad.PostPreview(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		draft := w.slack.waitFor(t, "draft message", func(c call) bool { return isPlaceholder(c) && c.Form.Get("thread_ts") == thread })
		if string(ts) != draft.TS || !strings.Contains(draft.Form.Get("blocks"), `"type":"plan"`) {
			t.Errorf("request %d: preview %s, draft %v", i, ts, draft.Form)
		}
		w.slack.waitFor(t, "preview in the draft", func(c call) bool {
			return c.Method == "chat.update" && c.Form.Get("ts") == draft.TS && strings.Contains(c.Form.Get("blocks"), "bobnet_approve")
		})
		calls := w.slack.snapshot()
		var drafting []call
		for _, c := range calls {
			if inThread(calls, thread)(c) && !isStatus(c) {
				drafting = append(drafting, c)
			}
		}
		paceOf(t, drafting)
		if n := w.slack.count(func(c call) bool { return c.Method == "chat.postMessage" && c.Form.Get("thread_ts") == thread }); n != 1 {
			t.Errorf("request %d: %d messages, want the draft alone", i, n)
		}
	}
	if n := w.slack.count(method("chat.startStream")); n != 1 {
		t.Errorf("chat.startStream asked %d times, want once: the refusal is remembered", n)
	}
}

// Whatever a request ends with, its draft becomes the answer: a streamed
// draft is stopped with it, a posted one or a placeholder updated to it;
// no draft message is left as it was.
func TestNoDraftLeftBehind(t *testing.T) {
	t.Parallel()
	endings := []struct {
		name   string
		answer func(d drafter, p board.Proposal) error
		want   string
	}{
		{"preview", func(d drafter, p board.Proposal) error { _, err := d.PostPreview(context.Background(), p); return err }, "bobnet_approve"},
		{"question", func(d drafter, p board.Proposal) error {
			return d.Reply(context.Background(), p.Thread, board.Reply{Kind: board.ReplyClarify, Text: "Which topic?", Questions: []string{"Science or sport?"}, Request: p.RequestID})
		}, "Science or sport?"},
		{"refusal", func(d drafter, p board.Proposal) error {
			return d.Reply(context.Background(), p.Thread, board.Reply{Kind: board.ReplyRefuse, Text: "I will not delete boards.", Request: p.RequestID})
		}, "I will not delete boards."},
		{"invalid plan", func(d drafter, p board.Proposal) error {
			return d.Reply(context.Background(), p.Thread, board.Reply{Kind: board.ReplyError, Text: "The model's plan was still invalid after a repair.", Request: p.RequestID})
		}, "still invalid after a repair"},
	}
	modes := []struct {
		name   string
		refuse string // the method Slack refuses
	}{{"stream", ""}, {"posted draft", "chat.startStream"}, {"placeholder", "assistant.threads.setStatus"}}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.slack.mu.Lock()
			w.slack.refuse = func(c call) string {
				if c.Method == mode.refuse {
					return "not_allowed_token_type"
				}
				return ""
			}
			w.slack.mu.Unlock()
			for i, end := range endings {
				thread := "1690000000.00060" + string(rune('0'+i))
				th := slackThread("C_NEWS", thread)
				p := newspaperProposal(t, bot.NewRequestID(), th)
				w.ad.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
				w.slack.waitFor(t, "status", func(c call) bool {
					return isStatus(c) && c.Form.Get("thread_ts") == thread || isPlaceholder(c) && c.Form.Get("thread_ts") == thread
				})
				streamCards(t, w.ad, p, 500*time.Millisecond)
				// Wait for the draft's message before the answer comes.
				first := w.slack.waitFor(t, "draft message", func(c call) bool {
					return c.Form.Get("thread_ts") == thread && (c.Method == "chat.startStream" && c.Refused == "" || c.Method == "chat.postMessage")
				})
				if err := end.answer(w.ad, p); err != nil {
					t.Fatalf("%s: %v", end.name, err)
				}
				calls := w.slack.snapshot()
				ended := false
				for _, c := range calls {
					if c.Form.Get("ts") != first.TS || c.Refused != "" {
						continue
					}
					switch {
					case c.Method == "chat.stopStream" && strings.Contains(c.blocks(), end.want),
						c.Method == "chat.update" && strings.Contains(c.blocks(), end.want),
						c.Method == "chat.delete":
						ended = true
					}
				}
				if !ended {
					t.Errorf("%s: the draft %s (%s) was left behind; calls %+v", end.name, first.TS, first.Method, calls)
				}
				posted := 0
				for _, c := range calls {
					if c.Method == "chat.postMessage" && c.Form.Get("thread_ts") == thread && c.TS != first.TS {
						posted++
					}
				}
				if posted != 0 {
					t.Errorf("%s: %d messages besides the draft", end.name, posted)
				}
				// A second reply naming the request is a message of its
				// own: the answer stays.
				before := len(w.slack.snapshot())
				if err := w.ad.Reply(context.Background(), th, board.Reply{Kind: board.ReplyInfo, Text: "Noted.", Request: p.RequestID}); err != nil {
					t.Fatal(err)
				}
				for _, c := range w.slack.snapshot()[before:] {
					if c.Form.Get("ts") == first.TS {
						t.Errorf("%s: a later reply touched the answer: %s", end.name, c.Method)
					}
				}
			}
		})
	}
}

// A stalled Slack API never holds the worker: Draft returns at once
// while the stream's start hangs, and the answer, once that call gave up,
// is posted on its own with nothing left behind.
func TestStalledSlackDuringADraft(t *testing.T) {
	t.Parallel()
	w := newWorldWith(t, func(c *slack.Config) { c.Timeout = 500 * time.Millisecond })
	w.slack.mu.Lock()
	w.slack.stall = method("chat.startStream")
	w.slack.mu.Unlock()
	th := slackThread("C_NEWS", "1690000000.000701")
	p := newspaperProposal(t, bot.NewRequestID(), th)
	w.ad.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
	w.slack.waitFor(t, "status", isStatus)
	streamCards(t, w.ad, p, time.Second)
	start := time.Now()
	ts, err := w.ad.PostPreview(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the answer took %s", took)
	}
	preview := w.slack.waitFor(t, "preview", isPreview)
	if string(ts) != preview.TS {
		t.Errorf("preview %s, posted %s", ts, preview.TS)
	}
	w.slack.mu.Lock()
	stalled := w.slack.stalled
	w.slack.mu.Unlock()
	if stalled != 1 {
		t.Errorf("%d stalled stream starts, want 1 (and no second try)", stalled)
	}
	if n := w.slack.count(isStream); n != 0 {
		t.Errorf("%d stream calls went through", n)
	}
}

// A 429 while drafting closes the channel for its Retry-After: the next
// call waits it out, and the answer still goes out in the stream.
func TestDraftHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	limited := false
	w.slack.mu.Lock()
	w.slack.limit = func(c call) time.Duration {
		if (c.Method == "chat.appendStream" || c.Method == "chat.stopStream") && !limited {
			limited = true
			return 2 * time.Second
		}
		return 0
	}
	w.slack.mu.Unlock()
	th := slackThread("C_NEWS", "1690000000.000801")
	p := newspaperProposal(t, bot.NewRequestID(), th)
	w.ad.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
	w.slack.waitFor(t, "status", isStatus)
	streamCards(t, w.ad, p, 3*time.Second)
	if _, err := w.ad.PostPreview(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	stop := w.slack.waitForLatest(t, "stream stop", method("chat.stopStream"))
	if stop.Limited != 0 || !strings.Contains(stop.Form.Get("blocks"), "bobnet_approve") {
		t.Fatalf("stop = %+v", stop)
	}
	calls := w.slack.snapshot()
	for i, c := range calls {
		if c.Limited == 0 {
			continue
		}
		for _, next := range calls[i+1:] {
			if isStream(next) {
				if gap := next.At.Sub(c.At); gap < 1900*time.Millisecond {
					t.Errorf("%s %s after a 429 asking for 2 s", next.Method, gap)
				}
				break
			}
		}
	}
}
