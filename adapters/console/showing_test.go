package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
)

func types(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// A draft is shown live and to a browser that connects while the model
// writes, and is gone once its request is answered (by a reply or a
// preview); another request's draft stays.
func TestDraftsAreLiveUntilAnswered(t *testing.T) {
	t.Parallel()
	c := New(fakeEngine{}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	th := board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: "newsroom"}}
	_, live, stop := c.Follow("newsroom", 0)
	defer stop()
	c.Publish("newsroom", "working", map[string]any{"request_id": "r_one"})
	for n := 1; n <= 3; n++ {
		cards := make([]plan.CardDraft, n)
		for i := range cards {
			cards[i] = plan.CardDraft{TempID: fmt.Sprint("c", i), Title: fmt.Sprint("Card ", i)}
		}
		if err := c.Draft(ctx, bot.Draft{Request: "r_one", Thread: th, Title: "Daily News", Cards: cards}); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.Draft(ctx, bot.Draft{Request: "r_two", Thread: th, Cards: []plan.CardDraft{{Title: "Other"}}})
	for i, want := range []string{"working", "draft", "draft", "draft", "draft"} {
		if ev := <-live; ev.Type != want {
			t.Fatalf("live event %d = %s, want %s", i, ev.Type, want)
		}
	}
	past, _, stop2 := c.Follow("newsroom", 0)
	stop2()
	if got := types(past); len(got) != 3 || got[1] != "draft" || got[2] != "draft" {
		t.Fatalf("a browser connecting now sees %v, want working and the two requests' latest drafts", got)
	}
	b, _ := json.Marshal(past[1].Data)
	var d struct {
		RequestID string `json:"request_id"`
		Title     string `json:"title"`
		Draft     bool   `json:"draft"`
		Cards     []struct {
			Title string `json:"title"`
		} `json:"cards"`
	}
	if err := json.Unmarshal(b, &d); err != nil || d.RequestID != "r_one" || d.Title != "Daily News" || !d.Draft || len(d.Cards) != 3 {
		t.Fatalf("draft event = %s", b)
	}
	// A reply not answering a request (run news) leaves the drafts; the
	// answers take theirs away.
	_ = c.Reply(ctx, th, board.Reply{Kind: board.ReplyInfo, Text: "Run 1 started"})
	if past, _, stop := c.Follow("newsroom", 0); len(past) != 4 {
		stop()
		t.Fatalf("after run news: %v", types(past))
	} else {
		stop()
	}
	_ = c.Reply(ctx, th, board.Reply{Kind: board.ReplyError, Text: "no plan", Request: "r_two"})
	_, _ = c.PostPreview(ctx, board.Proposal{ID: "p_oneaaaaaaaaaaaaa", RequestID: "r_one", Thread: th, State: board.ProposalPending})
	past, _, stop3 := c.Follow("newsroom", 0)
	stop3()
	if got := types(past); len(got) != 4 || got[0] != "working" || got[3] != "proposal" {
		t.Fatalf("after the answers: %v, want no draft left", got)
	}
	// A draft whose answer never comes here (another replica posted it)
	// is dropped after a while.
	_ = c.Draft(ctx, bot.Draft{Request: "r_lost", Thread: th, Cards: []plan.CardDraft{{Title: "Lost"}}})
	c.mu.Lock()
	ev := c.channels["newsroom"].live["draft:r_lost"]
	ev.At = time.Now().Add(-draftLife - time.Minute).UTC().Format(time.RFC3339)
	c.channels["newsroom"].live["draft:r_lost"] = ev
	c.mu.Unlock()
	if past, _, stop := c.Follow("newsroom", 0); len(past) != 4 {
		stop()
		t.Fatalf("a stale draft is still shown: %v", types(past))
	} else {
		stop()
	}
	b, _ = json.Marshal(past[3].Data)
	var p struct {
		ID        string `json:"id"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.ID != "p_oneaaaaaaaaaaaaa" || p.RequestID != "r_one" {
		t.Fatalf("proposal event = %s", b)
	}
}

// A run's progress is one live event replaced as the run goes, resumed
// in order with the history by event id, and the channel holds at most
// maxLive of them.
func TestRunProgressIsOneLiveEventPerRun(t *testing.T) {
	t.Parallel()
	c := New(fakeEngine{}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	th := board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: "news"}}
	show := func(run board.RunID, status string, failed, ended bool) {
		rc := board.RunCard{Card: "c_1", Handle: "NEWS-1", Title: "Research", Status: status}
		if failed {
			rc.Error = "the model server is unreachable"
		}
		st := board.RunRunning
		if ended {
			st = board.RunStopped
		}
		if err := c.RunProgress(ctx, bot.RunProgress{Thread: th, BoardTitle: "Daily News", Run: board.Run{ID: run, Number: 1, State: st, Cards: []board.RunCard{rc}},
			EditionURL: "http://bobnet.test/boards/b_1/runs/1", Ended: ended}); err != nil {
			t.Fatal(err)
		}
	}
	show("run_1", "Ready", false, false)
	c.Publish("news", "reply", board.Reply{Text: "Run 1 started"})
	show("run_1", "In Progress", false, false)
	show("run_1", "In Progress", true, true)
	past, _, stop := c.Follow("news", 0)
	stop()
	if got := types(past); len(got) != 2 || got[0] != "reply" || got[1] != "run_progress" {
		t.Fatalf("events = %v, want the reply and the run's latest progress after it", got)
	}
	b, _ := json.Marshal(past[1].Data)
	var v struct {
		Ended bool `json:"ended"`
		Tasks []struct {
			Task  string `json:"task"`
			Error string `json:"error"`
		} `json:"tasks"`
		EditionURL string `json:"edition_url"`
	}
	if err := json.Unmarshal(b, &v); err != nil || !v.Ended || len(v.Tasks) != 1 || v.Tasks[0].Task != string(bot.TaskError) || v.EditionURL == "" {
		t.Fatalf("run progress = %s", b)
	}
	if past, _, stop := c.Follow("news", past[1].ID); len(past) != 0 {
		stop()
		t.Fatalf("resuming after the latest event repeats %v", types(past))
	} else {
		stop()
	}
	for i := range maxLive + 4 {
		show(board.RunID(fmt.Sprint("run_x", i)), "Ready", false, false)
	}
	past, _, stop = c.Follow("news", 0)
	stop()
	if n := len(past); n != 1+maxLive {
		t.Fatalf("%d events held, want the reply and %d live ones", n, maxLive)
	}
}
