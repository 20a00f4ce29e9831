package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/adapters/console"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/sse"
	"github.com/bobnet/bobnet/store/storetest"
)

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

// TestChannelsAndBoardsLists: the channels of a console that keeps its
// history, the most recent first with their last event, and the boards
// page by page.
func TestChannelsAndBoardsLists(t *testing.T) {
	t.Parallel()
	store := storetest.NewStore(t)
	th := board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: "newsroom"}}
	con := console.New(&fakeEngine{}, store, discard())
	con.Publish("newsroom", "message", map[string]any{"user": "alice", "text": "plan our newspaper"})
	_ = con.Reply(context.Background(), th, board.Reply{Text: "on it"})
	_, _ = con.PostPreview(context.Background(), board.Proposal{ID: "p_pendingaaaaaaaaa", State: board.ProposalPending, Thread: th, RequestedBy: "alice"})
	_ = con.Reply(context.Background(), th, board.Reply{Text: "still here"})

	// A console started again lists the channel from its history.
	third := console.New(&fakeEngine{}, store, discard())
	if _, err := store.Execute(context.Background(), board.Execution{ProposalID: "p_homeaaaaaaaaaaaa", Channel: "console:newsroom", Plan: *planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{}).Plan}); err != nil {
		t.Fatal(err)
	}
	mux := chi.NewRouter()
	httpapi.NewChat(httpapi.ChatDeps{Engine: &fakeEngine{}, Channels: third, Successors: store, Boards: store, Requests: noRequests{}, Streams: sse.New(sse.Limits{})}, discard()).Routes(mux)
	var r http.Handler = mux
	var chs struct {
		Channels []struct {
			Channel  string `json:"channel"`
			Events   int    `json:"events"`
			LastType string `json:"last_type"`
		} `json:"channels"`
	}
	getJSON(t, r, "/api/v1/channels", &chs)
	if len(chs.Channels) != 1 || chs.Channels[0].Channel != "newsroom" || chs.Channels[0].Events != 4 || chs.Channels[0].LastType != "reply" {
		t.Fatalf("channels: %+v", chs)
	}
	var boards struct {
		Boards []struct {
			ID    board.ID `json:"id"`
			Cards int      `json:"cards"`
			URL   string   `json:"url"`
		} `json:"boards"`
		Next string `json:"next"`
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
