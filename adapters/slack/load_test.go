package slack_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/store/storetest"
)

// A flood of mentions, each delivered three times at once, makes one
// thread status and one preview per request. (Fifteen requests: within
// the workspace's budget of statuses, which
// TestStatusesOfABurstStayWithinTheWorkspacesBudget goes past.)
func TestMentionFloodShowsEachRequestOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t) // no rate limits
	const requests = 15
	flood(t, w, 3*requests, func(i int) string {
		n := i % requests
		return mentionFrom(fmt.Sprint("EvL", n), fmt.Sprint("U_", n), fmt.Sprint("C_", n%3), fmt.Sprintf("1690000003.%06d", n), "plan our daily research newspaper")
	})
	w.env.WaitIdle(t)
	for n := range requests {
		thread := fmt.Sprintf("1690000003.%06d", n)
		in := func(c call) bool { return c.Form.Get("thread_ts") == thread }
		w.slack.waitFor(t, "preview of "+thread, func(c call) bool { return isPreview(c) && in(c) })
		if s := w.slack.count(func(c call) bool { return isStatus(c) && in(c) }); s != 1 {
			t.Errorf("thread %s: %d statuses", thread, s)
		}
		if p := w.slack.count(func(c call) bool { return isPreview(c) && in(c) }); p != 1 {
			t.Errorf("thread %s: %d previews", thread, p)
		}
	}
}

// Two replicas drafting the same requests at once (a reclaimed request,
// an event delivered to both) start one stream per request, and drafts
// of several requests in one channel share its budget: at most one call
// a second in the channel.
func TestDraftsUnderLoad(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	other, err := slack.New(context.Background(), slack.Config{BotToken: "xoxb-test", SigningSecret: secret, APIURL: w.slack.srv.URL + "/api/", PublicURL: "https://bobnet.example.com"},
		w.env.Engine, redisstore.NewInFlight(w.env.Redis, w.env.Prefix), storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	const requests = 3
	var props []board.Proposal
	for i := range requests {
		th := slackThread("C_BUSY", fmt.Sprintf("1690000004.%06d", i))
		p := newspaperProposal(t, bot.NewRequestID(), th)
		props = append(props, p)
		w.ad.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
		other.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
	}
	w.slack.waitFor(t, "statuses", func(call) bool { return w.slack.count(isStatus) >= requests })
	var wg sync.WaitGroup
	for _, p := range props {
		for _, d := range []drafter{w.ad, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				streamCards(t, d, p, 2*time.Second)
			}()
		}
	}
	wg.Wait()
	for _, p := range props {
		if _, err := w.ad.PostPreview(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	// Only the replica that answered stops its goroutine at once; the
	// other's ends on its own (it finds the answer, or idles).
	for _, p := range props {
		in := func(c call) bool { return c.Form.Get("thread_ts") == p.Thread.ID }
		if n := w.slack.count(func(c call) bool { return isStatus(c) && in(c) && c.Form.Get("status") != "" }); n != 1 {
			t.Errorf("thread %s: %d statuses", p.Thread.ID, n)
		}
		if n := w.slack.count(func(c call) bool { return c.Method == "chat.startStream" && in(c) }); n != 1 {
			t.Errorf("thread %s: %d streams", p.Thread.ID, n)
		}
		if n := w.slack.count(func(c call) bool { return c.Method == "chat.postMessage" && in(c) }); n != 0 {
			t.Errorf("thread %s: %d messages posted besides the stream", p.Thread.ID, n)
		}
	}
	if n := w.slack.count(method("chat.stopStream")); n != requests {
		t.Errorf("%d streams stopped, want %d", n, requests)
	}
	// The other replica's drafts, late, never draw over the answers.
	for _, p := range props {
		_ = other.Draft(context.Background(), bot.Draft{Request: p.RequestID, Thread: p.Thread, Cards: p.Plan.Actions[0].Cards})
	}
	stops := len(w.slack.snapshot())
	time.Sleep(2500 * time.Millisecond)
	for _, c := range w.slack.snapshot()[stops:] {
		if c.Method == "chat.appendStream" || c.Method == "chat.update" {
			t.Errorf("a draft after the answer: %s %v", c.Method, c.Form)
		}
	}
}

// Drafts of several requests in one channel share its budget: at most
// one stream call a second in the channel, whichever request it shows.
func TestDraftsShareTheChannelsBudget(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var props []board.Proposal
	for i := range 3 {
		th := slackThread("C_BUSY", fmt.Sprintf("1690000005.%06d", i))
		p := newspaperProposal(t, bot.NewRequestID(), th)
		props = append(props, p)
		w.ad.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
	}
	w.slack.waitFor(t, "statuses", func(call) bool { return w.slack.count(isStatus) >= len(props) })
	var wg sync.WaitGroup
	for _, p := range props {
		wg.Add(1)
		go func() {
			defer wg.Done()
			streamCards(t, w.ad, p, 2*time.Second)
			if _, err := w.ad.PostPreview(context.Background(), p); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var inChannel []call
	for _, c := range w.slack.snapshot() {
		if isStream(c) {
			inChannel = append(inChannel, c)
		}
	}
	if n := w.slack.count(method("chat.stopStream")); n != len(props) {
		t.Errorf("%d streams stopped, want %d", n, len(props))
	}
	paceOf(t, inChannel)
}

// Two workspaces drafting in their own C0123, in threads of the same ts,
// at once: each draft is streamed with its workspace's token and turned
// into its own preview, and one workspace refusing streams (remembered
// for it) leaves the other streaming.
func TestDraftsInTwoWorkspacesDoNotMix(t *testing.T) {
	t.Parallel()
	w := newTeamsWorld(t)
	tokens := map[string]string{"T_A": w.install(t, "T_A"), "T_B": w.install(t, "T_B")}
	w.slack.mu.Lock()
	w.slack.refuse = func(team string, c teamCall) string {
		if team == "T_A" && c.Method == "chat.startStream" {
			return "not_allowed_token_type"
		}
		return ""
	}
	w.slack.mu.Unlock()
	props := map[string]board.Proposal{}
	for _, team := range []string{"T_A", "T_B"} {
		th := slackThread(team+"/C0123", "1690000000.000011")
		props[team] = newspaperProposal(t, bot.NewRequestID(), th)
		w.ad.ShowPlanning(th, props[team].RequestID, "U_ALICE", team)
	}
	w.slack.waitFor(t, "statuses", func(teamCall) bool {
		return w.slack.count(func(c teamCall) bool { return c.Method == "assistant.threads.setStatus" }) == 2
	})
	var wg sync.WaitGroup
	for _, team := range []string{"T_A", "T_B"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			streamCards(t, w.ad, props[team], 2*time.Second)
		}()
		if team == "T_A" {
			// T_B drafts once T_A's refusal is known.
			w.slack.waitFor(t, "T_A's refused stream", func(c teamCall) bool { return c.Method == "chat.startStream" })
		}
	}
	wg.Wait()
	got := map[string]board.MessageRef{}
	for team, p := range props {
		ts, err := w.ad.PostPreview(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		got[team] = ts
	}
	calls := w.slack.snapshot()
	for _, c := range calls {
		if c.Form.Get("channel") != "" && c.Form.Get("channel") != "C0123" || c.Form.Get("channel_id") != "" && c.Form.Get("channel_id") != "C0123" {
			t.Errorf("%s named channel %q: the workspace's prefix leaked", c.Method, c.Form.Get("channel"))
		}
	}
	// T_B streamed: its start, appends and stop carry its token and its
	// preview; T_A's token never touched T_B's stream.
	var bStart teamCall
	for _, c := range calls {
		if c.Method == "chat.startStream" && c.Token == tokens["T_B"] {
			bStart = c
		}
	}
	if bStart.TS == "" || string(got["T_B"]) != bStart.TS {
		t.Fatalf("T_B's preview %s, its stream %+v", got["T_B"], bStart)
	}
	for _, c := range calls {
		if c.Form.Get("ts") == bStart.TS && c.Token != tokens["T_B"] {
			t.Errorf("%s on T_B's stream with another token", c.Method)
		}
		if c.Method == "chat.stopStream" && c.Form.Get("ts") == bStart.TS && !strings.Contains(c.Form.Get("metadata"), string(props["T_B"].ID)) {
			t.Errorf("T_B's stream stopped with another preview: %s", c.Form.Get("metadata"))
		}
	}
	// T_A's stream was refused: its draft was posted and became its own
	// preview, with its token.
	var aDraft teamCall
	for _, c := range calls {
		if c.Method == "chat.postMessage" && c.Token == tokens["T_A"] && strings.Contains(c.Form.Get("metadata"), "bobnet_draft") {
			aDraft = c
		}
	}
	if aDraft.TS == "" || string(got["T_A"]) != aDraft.TS {
		t.Fatalf("T_A's preview %s, its draft %+v", got["T_A"], aDraft)
	}
	aPreview := false
	for _, c := range calls {
		if c.Method == "chat.update" && c.Form.Get("ts") == aDraft.TS {
			if c.Token != tokens["T_A"] {
				t.Errorf("T_A's draft updated with another token")
			}
			aPreview = aPreview || strings.Contains(c.Form.Get("metadata"), string(props["T_A"].ID))
		}
	}
	if !aPreview {
		t.Error("T_A's draft never became its preview")
	}
	if n := w.slack.count(func(c teamCall) bool { return c.Method == "chat.startStream" && c.Token == tokens["T_A"] }); n != 1 {
		t.Errorf("T_A was asked for a stream %d times", n)
	}
}
