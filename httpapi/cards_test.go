package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpapi"
)

// fakeCards answers card edits by the title asked for: each failure the
// engine can give has its title.
type fakeCards struct{}

const okCard = "c_aaaaaaaaaaaaaaaaaaaaaaaaaa"

func (fakeCards) EditCard(_ context.Context, ed bot.CardEdit) (board.CardUpdate, error) {
	card := board.Card{ID: ed.ID, Handle: "NEWS-1", Title: "T", Status: "Ready", Version: 2}
	if ed.ID == "" {
		if ed.Handle == "" {
			return board.CardUpdate{}, fmt.Errorf("neither an id nor a handle")
		}
		card.Handle = ed.Handle
	}
	title := ""
	if ed.Title != nil {
		title = *ed.Title
	}
	switch title {
	case "blocked":
		return board.CardUpdate{}, &board.BlockedError{Card: card, Status: "In Progress", Blockers: []board.Card{{ID: "c_b", Handle: "NEWS-2", Title: "Dep", Status: "Backlog"}}}
	case "in review":
		return board.CardUpdate{}, &board.ReviewGateError{Card: card, Run: "run_aaaaaaaaaaaaaaaaaaaaaaaaaa", Number: 3}
	case "stale":
		return board.CardUpdate{}, &board.ConflictError{Current: card, Based: 1}
	case "invalid":
		return board.CardUpdate{}, fmt.Errorf("%w: a title is 1 to 200 characters", board.ErrInvalidChange)
	case "missing":
		return board.CardUpdate{}, fmt.Errorf("card: %w", bot.ErrNotFound)
	case "down":
		return board.CardUpdate{}, fmt.Errorf("change card: %w", bot.ErrUnavailable)
	}
	if ed.Via != "api" && ed.Via != "page" {
		return board.CardUpdate{}, fmt.Errorf("via %q", ed.Via)
	}
	if ed.Status != nil {
		card.Status = *ed.Status
	}
	return board.CardUpdate{Card: card}, nil
}

// noCards finds no card and no board; only tokens limited to channels
// look cards up before editing them.
type noCards struct{}

func (noCards) Board(_ context.Context, id board.ID) (board.Board, []board.Card, error) {
	return board.Board{}, nil, fmt.Errorf("board %s: %w", id, board.ErrNotFound)
}

func (noCards) Card(_ context.Context, id board.CardID) (board.Card, error) {
	return board.Card{}, fmt.Errorf("card %s: %w", id, board.ErrNotFound)
}

func (noCards) CardsByHandle(context.Context, string) ([]board.Card, error) { return nil, nil }

func TestPatchCard(t *testing.T) {
	t.Parallel()
	r := chi.NewRouter()
	httpapi.NewCards(fakeCards{}, noCards{}, discard()).Routes(r)
	ts := httptest.NewServer(r)
	t.Cleanup(ts.Close)
	srv := ts.URL
	path := "/api/v1/cards/" + okCard
	for _, tc := range []struct {
		name, path, body string
		status           int
		contains         string
	}{
		{"move", path, `{"user":"alice","status":"In Progress"}`, 200, `"status":"In Progress"`},
		{"from the page", path, `{"user":"alice","status":"Done","via":"page"}`, 200, `"handle":"NEWS-1"`},
		{"nothing to change", path, `{"user":"alice"}`, 400, "nothing to change"},
		{"no user", path, `{"status":"Done"}`, 400, `\"user\" is required`},
		{"unknown field", path, `{"user":"alice","colour":"red"}`, 400, "unknown field"},
		{"by handle", "/api/v1/cards/NEWS2-7", `{"user":"alice","status":"Done"}`, 200, `"handle":"NEWS2-7"`},
		{"bad id", "/api/v1/cards/NEWS-1x", `{"user":"alice","status":"Done"}`, 404, "no card"},
		{"bad id shape", "/api/v1/cards/c_short", `{"user":"alice","status":"Done"}`, 404, "handle such as NEWS-3"},
		{"blocked", path, `{"user":"alice","title":"blocked"}`, 409, `"blocked_by":[{"handle":"NEWS-2"`},
		{"in review", path, `{"user":"alice","title":"in review"}`, 409, `"review":{"card_id":"` + okCard + `","commands":["accept NEWS-1","sendback NEWS-1 \u003cwhy\u003e"],"handle":"NEWS-1","path":"/api/v1/runs/run_aaaaaaaaaaaaaaaaaaaaaaaaaa/cards/NEWS-1/review","run_id":"run_aaaaaaaaaaaaaaaaaaaaaaaaaa"}`},
		{"stale version", path, `{"user":"alice","title":"stale","version":1}`, 409, "someone changed it since"},
		{"invalid", path, `{"user":"alice","title":"invalid"}`, 400, "1 to 200 characters"},
		{"missing", path, `{"user":"alice","title":"missing"}`, 404, "not found"},
		{"down", path, `{"user":"alice","title":"down"}`, 503, "unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest("PATCH", srv+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.contains) || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s, want %d with %q", resp.StatusCode, b, tc.status, tc.contains)
			}
		})
	}
}
