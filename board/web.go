package board

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/sse"
)

//go:embed board.html.tmpl
var boardPageSource string

//go:embed board.js
var boardScript []byte

var boardPage = template.Must(template.New("board").Funcs(template.FuncMap{
	"statusClass": statusClass,
}).Parse(boardPageSource))

// BoardURL is the link to a board's page that chat messages carry.
func BoardURL(publicURL string, id ID) string {
	return strings.TrimRight(publicURL, "/") + "/boards/" + string(id)
}

// reader is what the web handlers need from the store.
type reader interface {
	Board(ctx context.Context, id ID) (Board, []Card, error)
	Runs(ctx context.Context, id ID, limit int) ([]Run, error)
	ScheduleOf(ctx context.Context, id ID) (Schedule, error)
}

// Web serves boards to people (the page chat links to) and to programs
// (JSON). The page is public because its id is unguessable; the JSON routes
// are meant to sit behind the API token.
type Web struct {
	store  reader
	logger *slog.Logger
	feed   *Feed // nil: no live changes
	// streams caps the open event streams, and keeps them open past
	// the server's timeouts.
	streams *sse.Streams
}

// NewWeb returns the board handlers for store.
func NewWeb(store *Store, logger *slog.Logger) *Web {
	return &Web{store: store, logger: logger, streams: sse.New(sse.Limits{})}
}

// UseStreams counts the event streams against s instead of the board's own
// caps, so one process-wide cap covers them beside other streams.
func (w *Web) UseStreams(s *sse.Streams) { w.streams = s }

// Live makes the event routes stream the card changes feed carries.
func (w *Web) Live(feed *Feed) { w.feed = feed }

// APIRoutes mounts GET /api/v1/boards/{id}, GET /api/v1/boards/{id}/status
// and GET /api/v1/boards/{id}/events (server-sent card changes).
func (w *Web) APIRoutes(r chi.Router) {
	r.Get("/api/v1/boards/{id}", w.boardJSON)
	r.Get("/api/v1/boards/{id}/status", w.statusJSON)
	r.Get("/api/v1/boards/{id}/events", w.events)
}

// PageRoutes mounts GET /boards/{id}, its script and its live changes
// (GET /boards/{id}/events), which are as public as the page: whoever has
// the unguessable link may watch the board.
func (w *Web) PageRoutes(r chi.Router) {
	r.Get("/boards/{id}", w.page)
	r.Get("/boards/{id}/events", w.events)
	r.Get("/board-static/board.js", w.script)
}

// answers says how a handler answers a board it cannot show.
type answers struct {
	missing     func(rw http.ResponseWriter, id string)
	unavailable func(rw http.ResponseWriter)
}

var (
	jsonAnswers = answers{
		missing: func(rw http.ResponseWriter, id string) { writeError(rw, http.StatusNotFound, "no board "+id) },
		unavailable: func(rw http.ResponseWriter) {
			writeError(rw, http.StatusServiceUnavailable, "the board store is unavailable; try again shortly")
		},
	}
	pageAnswers = answers{
		missing: func(rw http.ResponseWriter, _ string) {
			rw.Header().Set("Content-Type", "text/html; charset=utf-8")
			rw.WriteHeader(http.StatusNotFound)
			_, _ = rw.Write([]byte("<!doctype html><title>No such board</title><p>No such board. Board links are long and exact: check that the whole link was copied.</p>"))
		},
		unavailable: func(rw http.ResponseWriter) {
			http.Error(rw, "The board store is unavailable; try again shortly.", http.StatusServiceUnavailable)
		},
	}
)

// load reads the board named in the URL. When it cannot, it has already
// answered, in the handler's own form, and reports false.
func (w *Web) load(rw http.ResponseWriter, r *http.Request, ans answers) (Board, []Card, bool) {
	text := chi.URLParam(r, "id")
	id, err := ParseID(text) // anything not shaped like a board id is not looked up
	if err != nil {
		ans.missing(rw, text)
		return Board{}, nil, false
	}
	b, cards, err := w.store.Board(r.Context(), id)
	if errors.Is(err, ErrNotFound) {
		ans.missing(rw, text)
		return Board{}, nil, false
	}
	if err != nil {
		w.logger.Error("read board", "board", id, "err", err)
		ans.unavailable(rw)
		return Board{}, nil, false
	}
	return b, cards, true
}

func (w *Web) boardJSON(rw http.ResponseWriter, r *http.Request) {
	b, cards, ok := w.load(rw, r, jsonAnswers)
	if !ok {
		return
	}
	writeJSON(rw, http.StatusOK, map[string]any{"board": b, "cards": cards})
}

func (w *Web) statusJSON(rw http.ResponseWriter, r *http.Request) {
	b, cards, ok := w.load(rw, r, jsonAnswers)
	if !ok {
		return
	}
	writeJSON(rw, http.StatusOK, Summarize(b, cards))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
