package console

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpapi"
)

// BoardLister lists boards for the console's home; *store.Store is one.
type BoardLister interface {
	Boards(ctx context.Context, after board.ID, limit int) ([]board.Listing, board.ID, error)
}

// ListBoards gives the console's home and GET /api/v1/boards their boards.
func (c *Console) ListBoards(l BoardLister) { c.boards = l }

// channelView is a console channel as GET /api/v1/channels lists it.
type channelView struct {
	Channel  string    `json:"channel"`
	Events   int       `json:"events"`
	LatestAt time.Time `json:"latest_at"`
	LastType string    `json:"last_type"`
}

// listChannels answers the console channels, the most recently active
// first: from the history when there is one, else from memory.
func (c *Console) listChannels(w http.ResponseWriter, r *http.Request) {
	out := []channelView{}
	if c.history != nil {
		chs, err := c.history.ConsoleChannels(r.Context())
		if err != nil {
			c.engineError(w, fmt.Errorf("%w: %w", bot.ErrUnavailable, err))
			return
		}
		for _, ch := range chs {
			out = append(out, channelView{Channel: ch.Channel, Events: ch.Events, LatestAt: ch.Latest, LastType: ch.LastType})
		}
	} else {
		c.mu.Lock()
		for name, ch := range c.channels {
			if n := len(ch.history); n > 0 {
				at, _ := time.Parse(time.RFC3339, ch.history[n-1].At)
				out = append(out, channelView{Channel: name, Events: n, LatestAt: at, LastType: ch.history[n-1].Type})
			}
		}
		c.mu.Unlock()
		sort.Slice(out, func(i, j int) bool { return out[i].LatestAt.After(out[j].LatestAt) })
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"channels": out})
}

// boardView is a board as GET /api/v1/boards lists it.
type boardView struct {
	ID        board.ID       `json:"id"`
	Name      string         `json:"name"`
	Key       string         `json:"key"`
	Channel   string         `json:"channel"`
	CreatedAt time.Time      `json:"created_at"`
	Cards     int            `json:"cards"`
	Counts    map[string]int `json:"counts"`
	URL       string         `json:"url"`
}

// Bounds of one page of boards.
const (
	defaultBoardPage = 50
	maxBoardPage     = 100
)

// listBoards answers a page of boards, newest first; ?after=<board id>
// continues from the previous page's "next".
func (c *Console) listBoards(w http.ResponseWriter, r *http.Request) {
	if c.boards == nil {
		httpapi.WriteError(w, http.StatusNotFound, "this BobNet keeps no boards")
		return
	}
	limit := defaultBoardPage
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxBoardPage {
			httpapi.WriteError(w, http.StatusBadRequest, "limit must be a whole number from 1 to 100")
			return
		}
		limit = n
	}
	var after board.ID
	if v := r.URL.Query().Get("after"); v != "" {
		id, err := board.ParseID(v)
		if err != nil {
			httpapi.WriteError(w, http.StatusBadRequest, "after must be a board id from the previous page's next")
			return
		}
		after = id
	}
	list, next, err := c.boards.Boards(r.Context(), after, limit)
	if err != nil {
		c.engineError(w, fmt.Errorf("%w: %w", bot.ErrUnavailable, err))
		return
	}
	out := make([]boardView, len(list))
	for i, b := range list {
		out[i] = boardView{ID: b.ID, Name: b.Name, Key: b.Key, Channel: b.Channel, CreatedAt: b.CreatedAt, Cards: b.Cards, Counts: b.Counts, URL: "/boards/" + string(b.ID)}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"boards": out, "next": next})
}
