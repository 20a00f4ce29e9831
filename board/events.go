package board

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// keepAlive is how often an idle event stream sends a comment, so proxies
// do not close it.
const keepAlive = 15 * time.Second

// events streams a board's card changes as server-sent events named
// "card", each the JSON of a CardEvent. A viewer that reconnects reloads
// the board rather than replaying what it missed.
func (w *Web) events(rw http.ResponseWriter, r *http.Request) {
	b, _, ok := w.load(rw, r, jsonAnswers)
	if !ok {
		return
	}
	flusher, canFlush := rw.(http.Flusher)
	if w.feed == nil || !canFlush {
		writeError(rw, http.StatusServiceUnavailable, "live board changes are not available on this server")
		return
	}
	sub, cancel := w.feed.Subscribe(b.ID)
	defer cancel()
	rw.Header().Set("Content-Type", "text/event-stream")
	rw.Header().Set("Cache-Control", "no-cache")
	rw.Header().Set("X-Accel-Buffering", "no")
	rw.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(rw, "retry: 2000\n\n")
	flusher.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-sub:
			if !ok {
				return // too slow: the viewer reconnects and reloads
			}
			data, err := json.Marshal(ev)
			if err != nil {
				continue
			}
			if _, err := fmt.Fprintf(rw, "id: %d\nevent: card\ndata: %s\n\n", ev.AuditID, data); err != nil {
				return
			}
			flusher.Flush()
		case <-tick.C:
			if _, err := io.WriteString(rw, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}
