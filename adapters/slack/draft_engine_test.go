package slack_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// showing registers the adapter as the server does: the engine shows
// drafts and runs through it too.
func (w *world) showing() {
	w.env.Engine.Register(board.SourceSlack, bot.Registration{Poster: w.ad, Notifier: w.ad, Reminders: w.ad, Groups: w.ad, Drafts: w.ad, Runs: w.ad})
}

// Through the engine: a model streaming the newspaper plan over 3 s
// shows in the thread within a second of the ack (the status), then as a
// stream of draft cards at most one call a second, and the stream ends
// as the preview: 10 task cards and the buttons, which decide.
func TestSlackDraftThroughTheEngine(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.showing()
	plan := plannertest.NewspaperPlan(t)
	w.env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply {
		return plannertest.Reply{Content: plan, Chunks: 30, ChunkDelay: 100 * time.Millisecond}
	})
	if resp := w.post(t, "/slack/events", "application/json", mentionEvent("EvE1", "1690000000.000991", "plan our daily research newspaper")); resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	acked := time.Now()
	st := w.slack.waitFor(t, "status", isStatus)
	if d := st.At.Sub(acked); d > time.Second {
		t.Errorf("first sign %s after the ack", d)
	}
	start := w.slack.waitFor(t, "stream", method("chat.startStream"))
	stop := w.slack.waitFor(t, "the preview ending the stream", func(c call) bool {
		return c.Method == "chat.stopStream" && strings.Contains(c.Form.Get("blocks"), "bobnet_approve")
	})
	if stop.Form.Get("ts") != start.TS {
		t.Fatalf("stop %s, stream %s", stop.Form.Get("ts"), start.TS)
	}
	tasks := 0
	for _, ch := range stop.chunks(t) {
		if ch["type"] == "task_update" && ch["status"] == "pending" {
			tasks++
		}
	}
	if tasks != 10 {
		t.Errorf("%d task cards in the preview, want 10", tasks)
	}
	w.env.WaitIdle(t)
	if n := w.slack.count(isPreview); n != 0 {
		t.Errorf("%d previews posted besides the stream", n)
	}
	var stream []call
	for _, c := range w.slack.snapshot() {
		if isStream(c) {
			stream = append(stream, c)
		}
	}
	paceOf(t, stream)
	pid := proposalID.FindStringSubmatch(stop.Form.Get("blocks"))[1]
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_ALICE", "bobnet_approve", pid, start.TS))
	w.slack.waitFor(t, "approved", func(c call) bool {
		return c.Method == "chat.update" && c.Form.Get("ts") == start.TS && strings.Contains(c.blocks(), "Approved by <@U_ALICE>")
	})
}

// Through the engine: once the board is approved, a run shows as one
// message in the board's thread whose tasks move as the run goes: the
// first card in progress once its runner's output waits for review,
// complete once accepted.
func TestSlackRunProgressThroughTheEngine(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.showing()
	plan := plannertest.NewspaperPlan(t)
	w.env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: plan} })
	if resp := w.post(t, "/slack/events", "application/json", mentionEvent("EvR1", "1690000000.000992", "plan our daily research newspaper")); resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	preview := w.slack.waitFor(t, "the preview", func(c call) bool {
		return (c.Method == "chat.stopStream" || c.Method == "chat.postMessage" || c.Method == "chat.update") && strings.Contains(c.Form.Get("blocks"), "bobnet_approve")
	})
	ts := preview.Form.Get("ts")
	if ts == "" {
		ts = preview.TS
	}
	pid := proposalID.FindStringSubmatch(preview.Form.Get("blocks"))[1]
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_ALICE", "bobnet_approve", pid, ts))
	w.slack.waitFor(t, "approved", func(c call) bool {
		return c.Method == "chat.update" && strings.Contains(c.blocks(), "Approved by <@U_ALICE>")
	})
	ctx := context.Background()
	if _, err := w.env.Engine.StartRun(ctx, board.Channel{Source: board.SourceSlack, ID: "C_NEWS"}, "U_ALICE", ""); err != nil {
		t.Fatal(err)
	}
	first := w.slack.waitFor(t, "the run's message", isRunMessage)
	if title, st := runTasks(t, first); !strings.HasPrefix(title, "Run 1 of") || len(st) != 10 {
		t.Fatalf("first draw %q with %d tasks; want run 1 and the board's 10 cards", title, len(st))
	}
	job, ok, err := w.env.Store.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	up, err := w.env.Store.CompleteRunCard(ctx, job, "Planner", "today's topics")
	if err != nil {
		t.Fatal(err)
	}
	w.env.Engine.CardOutput(ctx, job, up) // as the run worker does
	// Its output waits for review, in progress; accepted, it is done.
	w.slack.waitFor(t, "the run's message redrawn with the card under review", func(c call) bool {
		if c.Method != "chat.update" || c.Form.Get("ts") != first.TS {
			return false
		}
		_, st := runTasks(t, c)
		return st["NEWS-1 · Define daily topic and source policy"] == "in_progress"
	})
	if _, err := w.env.Engine.ReviewRunCard(ctx, job.Run.ID, job.RunCard.Card, 0, "U_ALICE", true, ""); err != nil {
		t.Fatal(err)
	}
	w.slack.waitFor(t, "the run's message redrawn with a card complete", func(c call) bool {
		if c.Method != "chat.update" || c.Form.Get("ts") != first.TS {
			return false
		}
		_, st := runTasks(t, c)
		return st["NEWS-1 · Define daily topic and source policy"] == "complete"
	})
	if n := w.slack.count(isRunMessage); n != 1 {
		t.Errorf("%d run messages; want one, redrawn", n)
	}
}
