package board

import (
	"net/http"
	"strconv"

	"github.com/bobnet/bobnet/sse"
)

// events streams a board's card changes as server-sent events named
// "card", each the JSON of a CardEvent. A viewer that reconnects reloads
// the board rather than replaying what it missed.
func (w *Web) events(rw http.ResponseWriter, r *http.Request) {
	b, _, ok := w.load(rw, r, jsonAnswers)
	if !ok {
		return
	}
	if w.feed == nil {
		writeError(rw, http.StatusServiceUnavailable, "live board changes are not available on this server")
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
	_ = sse.Pump(r.Context(), st, sub, func(ev CardEvent) error {
		return st.Send(strconv.FormatInt(ev.AuditID, 10), "card", ev)
	})
}
