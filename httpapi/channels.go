package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
	"github.com/bobnet/bobnet/sse"
)

// events streams a console channel's events, resuming after Last-Event-ID.
func (c *Chat) events(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "channel")
	if !board.ValidConsoleName(name) {
		httpjson.Error(w, http.StatusBadRequest, "bad channel name")
		return
	}
	if !reachConsole(w, r, name) {
		return
	}
	st, ok := c.streams.Open(w, r)
	if !ok {
		return
	}
	defer st.Close()
	lastID, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	past, live, stop := c.channels.Follow(name, lastID)
	defer stop()
	// A closed subscription means the browser fell behind: it reconnects
	// and resumes from Last-Event-ID.
	_ = sse.Replay(r.Context(), st, past, live)
}

// channelView is a console channel as GET /api/v1/channels lists it.
type channelView struct {
	Channel  string    `json:"channel"`
	Events   int       `json:"events"`
	LatestAt time.Time `json:"latest_at"`
	LastType string    `json:"last_type"`
}

// listChannels answers the console channels, the most recently active
// first: from the history when there is one, else from memory. A token
// limited to channels lists only its own.
func (c *Chat) listChannels(w http.ResponseWriter, r *http.Request) {
	chs, err := c.channels.Channels(r.Context())
	if err != nil {
		c.engineError(w, fmt.Errorf("%w: %w", bot.ErrUnavailable, err))
		return
	}
	out := make([]channelView, 0, len(chs))
	for _, ch := range chs {
		if !reaches(r, consoleKey(ch.Channel)) {
			continue
		}
		out = append(out, channelView{Channel: ch.Channel, Events: ch.Events, LatestAt: ch.Latest, LastType: ch.LastType})
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"channels": out})
}

// reachConsole answers 404 and reports false when the request's token
// may not reach the console channel name. A console channel exists as
// soon as it is written to, so there is no unknown one to answer like:
// the 404 is the same for every channel out of reach.
func reachConsole(w http.ResponseWriter, r *http.Request, name string) bool {
	if reaches(r, consoleKey(name)) {
		return true
	}
	httpjson.Error(w, http.StatusNotFound, "no channel "+name)
	return false
}
