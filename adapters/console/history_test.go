package console

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

// chiRouter is c's API as serve mounts it.
func chiRouter(c *Console) http.Handler {
	r := chi.NewRouter()
	c.APIRoutes(r)
	return r
}

// getJSON asks h for path, requires 200 and decodes the answer.
func getJSON(t *testing.T, h http.Handler, path string, out any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
	}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// status is the status h answers GET path with.
func status(t *testing.T, h http.Handler, path string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code
}

// TestHistorySurvivesARestart: a console started again on the same
// database shows the channel's past, a pending preview included, and
// numbers new events after it; the channels and boards lists see it.
func TestHistorySurvivesARestart(t *testing.T) {
	t.Parallel()
	store := storetest.NewStore(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	th := bot.Thread{Channel: bot.Channel{Source: bot.SourceConsole, ID: "newsroom"}}
	first := New(&fakeEngine{}, logger)
	first.Remember(store)
	first.publish("newsroom", "message", map[string]any{"user": "alice", "text": "plan our newspaper"})
	_ = first.Reply(context.Background(), th, bot.Reply{Text: "on it"})
	_, _ = first.PostPreview(context.Background(), bot.Proposal{ID: "p_pendingaaaaaaaaa", State: bot.ProposalPending, Thread: th, RequestedBy: "alice"})

	again := New(&fakeEngine{}, logger)
	again.Remember(store)
	past, _ := again.subscribe("newsroom", 0)
	if len(past) != 3 || past[0].Type != "message" || past[2].Type != "proposal" || past[2].ID != 3 {
		t.Fatalf("after the restart the channel holds %+v", past)
	}
	var preview proposalView
	b, _ := json.Marshal(past[2].Data)
	if err := json.Unmarshal(b, &preview); err != nil || preview.ID != "p_pendingaaaaaaaaa" || preview.State != bot.ProposalPending {
		t.Fatalf("pending preview after the restart: %+v %v", preview, err)
	}
	_ = again.Reply(context.Background(), th, bot.Reply{Text: "still here"})
	if past, _ := again.subscribe("newsroom", 3); len(past) != 1 || past[0].ID != 4 {
		t.Fatalf("new events are not numbered after the old ones: %+v", past)
	}

	// A third start sees all four, and the API lists the channel.
	third := New(&fakeEngine{}, logger)
	third.Remember(store)
	third.ListBoards(store)
	if _, err := store.Execute(context.Background(), board.Execution{ProposalID: "p_homeaaaaaaaaaaaa", Channel: "console:newsroom", Plan: *planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{}).Plan}); err != nil {
		t.Fatal(err)
	}
	r := chiRouter(third)
	var chs struct {
		Channels []channelView `json:"channels"`
	}
	getJSON(t, r, "/api/v1/channels", &chs)
	if len(chs.Channels) != 1 || chs.Channels[0].Channel != "newsroom" || chs.Channels[0].Events != 4 || chs.Channels[0].LastType != "reply" {
		t.Fatalf("channels: %+v", chs)
	}
	var boards struct {
		Boards []boardView `json:"boards"`
		Next   string      `json:"next"`
	}
	getJSON(t, r, "/api/v1/boards?limit=10", &boards)
	if len(boards.Boards) != 1 || boards.Boards[0].Cards == 0 || boards.Boards[0].URL != "/boards/"+string(boards.Boards[0].ID) || boards.Next != "" {
		t.Fatalf("boards: %+v", boards)
	}
	for _, bad := range []string{"/api/v1/boards?limit=0", "/api/v1/boards?limit=101", "/api/v1/boards?after=nope"} {
		if code := status(t, r, bad); code != http.StatusBadRequest {
			t.Errorf("%s: %d", bad, code)
		}
	}
}
