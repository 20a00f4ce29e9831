// Package web serves the board page people open from chat links, its
// script, and its live stream of card changes (server-sent events).
package web

import (
	"context"
	_ "embed"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpjson"
	"github.com/bobnet/bobnet/sse"
)

//go:embed board.html.tmpl
var boardPageSource string

//go:embed board.js
var boardScript []byte

// boardPage is parsed when first drawn: a server nobody has opened a
// board on keeps neither its parse tree nor the parser's pages.
var boardPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("board").Funcs(template.FuncMap{
		"statusClass": statusClass,
		// A person is shown by a readable label (@U123, @alice:server).
		"assignee": board.AssigneeLabel,
	}).Parse(boardPageSource))
})

// Reader is what the page needs of storage; *store.Store is one.
type Reader interface {
	Board(ctx context.Context, id board.ID) (board.Board, []board.Card, error)
	Runs(ctx context.Context, id board.ID, limit int) ([]board.Run, error)
	ScheduleOf(ctx context.Context, id board.ID) (board.Schedule, error)
}

// Feed carries a board's card changes to a subscriber until cancel is
// called; *store.Feed is one.
type Feed interface {
	Subscribe(id board.ID) (events <-chan board.CardEvent, cancel func())
}

// Pages serves boards to people: the page chat links to and its live
// changes. The page is public because its id is unguessable.
type Pages struct {
	store  Reader
	logger *slog.Logger
	feed   Feed // nil: no live changes
	// streams caps the open event streams, and keeps them open past
	// the server's timeouts.
	streams *sse.Streams
}

// New returns the board pages on store.
func New(store Reader, logger *slog.Logger) *Pages {
	return &Pages{store: store, logger: logger, streams: sse.New(sse.Limits{})}
}

// UseStreams counts the event streams against s instead of the board's own
// caps, so one process-wide cap covers them beside other streams.
func (w *Pages) UseStreams(s *sse.Streams) { w.streams = s }

// Live makes the event routes stream the card changes feed carries.
func (w *Pages) Live(feed Feed) { w.feed = feed }

// PageRoutes mounts GET /boards/{id}, its script and its live changes
// (GET /boards/{id}/events), which are as public as the page: whoever has
// the unguessable link may watch the board.
func (w *Pages) PageRoutes(r chi.Router) {
	r.Get("/boards/{id}", w.page)
	r.Get("/boards/{id}/events", w.Events)
	r.Get("/board-static/board.js", w.script)
}

// answers says how a handler answers a board it cannot show.
type answers struct {
	missing     func(rw http.ResponseWriter, id string)
	unavailable func(rw http.ResponseWriter)
}

var (
	jsonAnswers = answers{
		missing: func(rw http.ResponseWriter, id string) { httpjson.Error(rw, http.StatusNotFound, "no board "+id) },
		unavailable: func(rw http.ResponseWriter) {
			httpjson.Error(rw, http.StatusServiceUnavailable, "the board store is unavailable; try again shortly")
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
func (w *Pages) load(rw http.ResponseWriter, r *http.Request, ans answers) (board.Board, []board.Card, bool) {
	text := chi.URLParam(r, "id")
	id, err := board.ParseID(text) // anything not shaped like a board id is not looked up
	if err != nil {
		ans.missing(rw, text)
		return board.Board{}, nil, false
	}
	b, cards, err := w.store.Board(r.Context(), id)
	if errors.Is(err, board.ErrNotFound) {
		ans.missing(rw, text)
		return board.Board{}, nil, false
	}
	if err != nil {
		w.logger.Error("read board", "board", id, "err", err)
		ans.unavailable(rw)
		return board.Board{}, nil, false
	}
	return b, cards, true
}
