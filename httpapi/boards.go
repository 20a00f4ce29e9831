package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpjson"
)

// BoardReader reads a board with its cards; *store.Store is one.
type BoardReader interface {
	Board(ctx context.Context, id board.ID) (board.Board, []board.Card, error)
}

// Boards serves boards to programs as JSON, and their live changes.
type Boards struct {
	store  BoardReader
	logger *slog.Logger
	// stream answers GET /api/v1/boards/{id}/events: the board page's
	// stream (web.Pages.Events), the same for programs as for people.
	stream http.HandlerFunc
}

// NewBoards makes the boards API; stream serves a board's server-sent
// card changes.
func NewBoards(store BoardReader, stream http.HandlerFunc, logger *slog.Logger) *Boards {
	return &Boards{store: store, stream: stream, logger: logger}
}

// Routes mounts GET /api/v1/boards/{id}, GET /api/v1/boards/{id}/status
// and GET /api/v1/boards/{id}/events (server-sent card changes); the
// caller puts the token guard in front.
func (x *Boards) Routes(r chi.Router) {
	r.Get("/api/v1/boards/{id}", x.board)
	r.Get("/api/v1/boards/{id}/status", x.status)
	r.Get("/api/v1/boards/{id}/events", x.events)
}

// events streams a board's card changes. A token limited to channels
// has the board read first, so a board it may not reach is answered as
// an unknown one is, before the stream opens.
func (x *Boards) events(w http.ResponseWriter, r *http.Request) {
	if limited(r) {
		if _, _, ok := x.load(w, r); !ok {
			return
		}
	}
	x.stream(w, r)
}

// load reads the board named in the URL. When it cannot, or the
// request's token may not reach the board's channel, it has already
// answered (a board out of reach as an unknown one) and reports false.
func (x *Boards) load(w http.ResponseWriter, r *http.Request) (board.Board, []board.Card, bool) {
	text := chi.URLParam(r, "id")
	id, err := board.ParseID(text) // anything not shaped like a board id is not looked up
	if err != nil {
		httpjson.Error(w, http.StatusNotFound, "no board "+text)
		return board.Board{}, nil, false
	}
	b, cards, err := x.store.Board(r.Context(), id)
	if err == nil && !reaches(r, b.Channel) {
		err = board.ErrNotFound
	}
	if errors.Is(err, board.ErrNotFound) {
		httpjson.Error(w, http.StatusNotFound, "no board "+text)
		return board.Board{}, nil, false
	}
	if err != nil {
		x.logger.Error("read board", "board", id, "err", err)
		httpjson.Error(w, http.StatusServiceUnavailable, "the board store is unavailable; try again shortly")
		return board.Board{}, nil, false
	}
	return b, cards, true
}

func (x *Boards) board(w http.ResponseWriter, r *http.Request) {
	b, cards, ok := x.load(w, r)
	if !ok {
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"board": b, "cards": cards})
}

func (x *Boards) status(w http.ResponseWriter, r *http.Request) {
	b, cards, ok := x.load(w, r)
	if !ok {
		return
	}
	httpjson.Write(w, http.StatusOK, board.Summarize(b, cards))
}
