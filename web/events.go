package web

import (
	"net/http"
	"strconv"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpjson"
	"github.com/bobnet/bobnet/sse"
)

// Events streams a board's card changes as server-sent events named
// "card", each the JSON of a CardEvent. It answers both the page's
// /boards/{id}/events and the API's /api/v1/boards/{id}/events. A viewer
// that reconnects reloads the board rather than replaying what it missed.
func (w *Pages) Events(rw http.ResponseWriter, r *http.Request) {
	b, _, ok := w.load(rw, r, jsonAnswers)
	if !ok {
		return
	}
	if w.feed == nil {
		httpjson.Error(rw, http.StatusServiceUnavailable, "live board changes are not available on this server")
		return
	}
	st, ok := w.streams.Open(rw, r)
	if !ok {
		return
	}
	defer st.Close()
	sub, cancel := w.feed.Subscribe(b.ID)
	defer cancel()
	// A closed subscription means the viewer fell behind: it reconnects
	// and reloads.
	_ = sse.Pump(r.Context(), st, sub, func(ev board.CardEvent) error {
		return st.Send(strconv.FormatInt(ev.AuditID, 10), "card", ev)
	})
}
