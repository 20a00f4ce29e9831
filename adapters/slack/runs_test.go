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
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/store/storetest"
)

func isRunMessage(c call) bool {
	return c.Method == "chat.postMessage" && strings.Contains(c.Form.Get("metadata"), "bobnet_run_progress")
}

// runTasks are the statuses of the plan block of a run's message, by
// task title.
func runTasks(t *testing.T, c call) (title string, statuses map[string]string) {
	t.Helper()
	var blocks []map[string]any
	if err := json.Unmarshal([]byte(c.Form.Get("blocks")), &blocks); err != nil {
		t.Fatal(err)
	}
	statuses = map[string]string{}
	for _, b := range blocks {
		if b["type"] != "plan" {
			continue
		}
		title, _ = b["title"].(string)
		for _, task := range b["tasks"].([]any) {
			m := task.(map[string]any)
			s, _ := m["status"].(string)
			statuses[m["title"].(string)] = s
		}
	}
	return title, statuses
}

// A run's progress is one message in the board's thread, redrawn as its
// cards move, at most once a second with the newest state (coalesced),
// its tasks reaching complete, and error for a failed card, and ending
// with the edition's link. A second replica carrying the run on finds
// the message rather than posting another.
func TestRunProgressMessage(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	th := slackThread("C_NEWS", "1690000000.000901")
	run := board.Run{ID: "run_1", Number: 3, State: "running", Cards: []board.RunCard{
		{Card: "c_1", Handle: "NEWS-1", Title: "Pick topics", Status: "Ready", Assignee: "Planner"},
		{Card: "c_2", Handle: "NEWS-2", Title: "Research", Status: "Backlog", Assignee: "Researcher"},
		{Card: "c_3", Handle: "NEWS-3", Title: "Images", Status: "Backlog", Assignee: "Researcher"},
	}}
	progress := func(r bot.RunShower, p bot.RunProgress) {
		t.Helper()
		start := time.Now()
		if err := r.RunProgress(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 100*time.Millisecond {
			t.Errorf("RunProgress held the run %s", took)
		}
	}
	p := bot.RunProgress{Thread: th, BoardTitle: "Daily Research Newspaper", Run: cloneRun(run)}
	steps := []func(){
		func() { run.Cards[0].Status = "In Progress" },
		func() { run.Cards[0].Status = "Done"; run.Cards[1].Status = "In Progress" },
		func() { run.Cards[1].Status = "Review"; run.Cards[2].Status = "In Progress" },
		func() { run.Cards[1].Status = "Done" },
	}
	calls := 1
	progress(w.ad, p)
	for _, step := range steps {
		time.Sleep(150 * time.Millisecond)
		step()
		p.Run = cloneRun(run)
		progress(w.ad, p)
		calls++
	}
	first := w.slack.waitFor(t, "run message", isRunMessage)
	if first.Form.Get("thread_ts") != th.ID {
		t.Errorf("run message outside the board's thread: %v", first.Form)
	}
	if title, st := runTasks(t, first); title != "Run 3 of Daily Research Newspaper" || len(st) != 3 {
		t.Errorf("first draw %q %v", title, st)
	}
	// Coalesced: the newest state is drawn, not every step.
	w.slack.waitFor(t, "latest step drawn", func(c call) bool {
		_, st := runTasks(t, c)
		return c.Method == "chat.update" && st["NEWS-2 · Research"] == "complete"
	})
	if n := w.slack.count(func(c call) bool { return c.Form.Get("ts") == first.TS || c.TS == first.TS }); n >= calls {
		t.Errorf("%d Slack calls for %d progress steps in under a second: not coalesced", n, calls)
	}

	// Another replica carries the run to its end: one card fails. (Each
	// replica keeps its own budget: this one comes a second later.)
	time.Sleep(1100 * time.Millisecond)
	other, err := slack.New(context.Background(), slack.Config{BotToken: "xoxb-test", SigningSecret: secret, APIURL: w.slack.srv.URL + "/api/"},
		w.env.Engine, redisstore.NewInFlight(w.env.Redis, w.env.Prefix), storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	run.Cards[2].Status, run.Cards[2].Error = "In Progress", "the image search timed out"
	run.State = "failed"
	p.Run, p.Ended, p.EditionURL = cloneRun(run), true, "https://bobnet.example.com/boards/b_1/runs/3"
	progress(other, p)
	last := w.slack.waitFor(t, "the run's end", func(c call) bool {
		return c.Method == "chat.update" && strings.Contains(c.Form.Get("blocks"), "Read the edition")
	})
	if last.Form.Get("ts") != first.TS {
		t.Errorf("the end redrew %s, not the run's message %s", last.Form.Get("ts"), first.TS)
	}
	_, st := runTasks(t, last)
	want := map[string]string{"NEWS-1 · Pick topics": "complete", "NEWS-2 · Research": "complete", "NEWS-3 · Images": "error"}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("%s is %q, want %q (%v)", k, st[k], v, st)
		}
	}
	if n := w.slack.count(isRunMessage); n != 1 {
		t.Errorf("%d run messages, want 1", n)
	}
	var drawn []call
	for _, c := range w.slack.snapshot() {
		if c.TS == first.TS && c.Method == "chat.postMessage" || c.Method == "chat.update" && c.Form.Get("ts") == first.TS {
			drawn = append(drawn, c)
		}
	}
	paceOf(t, drawn)
}

func cloneRun(r board.Run) board.Run {
	r.Cards = append([]board.RunCard(nil), r.Cards...)
	return r
}
