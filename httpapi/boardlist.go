package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
)

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
// continues from the previous page's "next". A token limited to
// channels lists only the boards of its channels.
func (c *Chat) listBoards(w http.ResponseWriter, r *http.Request) {
	limit := defaultBoardPage
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxBoardPage {
			httpjson.Error(w, http.StatusBadRequest, "limit must be a whole number from 1 to 100")
			return
		}
		limit = n
	}
	var after board.ID
	if v := r.URL.Query().Get("after"); v != "" {
		id, err := board.ParseID(v)
		if err != nil {
			httpjson.Error(w, http.StatusBadRequest, "after must be a board id from the previous page's next")
			return
		}
		after = id
	}
	var within []string
	if t, ok := apitoken.FromContext(r.Context()); ok && t.Limited() {
		within = t.Channels
	}
	list, next, err := c.boards.Boards(r.Context(), after, limit, within)
	if err != nil {
		c.engineError(w, fmt.Errorf("%w: %w", bot.ErrUnavailable, err))
		return
	}
	out := make([]boardView, len(list))
	for i, b := range list {
		out[i] = boardView{ID: b.ID, Name: b.Name, Key: b.Key, Channel: b.Channel, CreatedAt: b.CreatedAt, Cards: b.Cards, Counts: b.Counts, URL: "/boards/" + string(b.ID)}
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"boards": out, "next": next})
}
