package slack

import (
	"net/http"

	"github.com/bobnet/bobnet/signing"
	"github.com/go-chi/chi/v5"
)

// Body caps per endpoint: what Slack sends is far smaller (an event with a
// 40,000-character message, a click on a 50-block message, a slash
// command's form), and nothing is read past them.
const (
	maxEventBody       = 256 << 10
	maxInteractionBody = 512 << 10
	maxCommandBody     = 16 << 10
)

// readingSlots bounds how many request bodies are read at once before
// their signature is known; past it a request is refused at once with 503
// (Slack retries), so slow uploads cannot pile up memory and goroutines.
const readingSlots = 128

// Routes mounts the three signed endpoints.
func (a *Adapter) Routes(r chi.Router) {
	r.Post("/slack/events", a.signed(maxEventBody, a.events))
	r.Post("/slack/interactivity", a.signed(maxInteractionBody, a.interactivity))
	r.Post("/slack/commands", a.signed(maxCommandBody, a.commands))
}

// signed checks Slack's signature headers, then reads the body (capped,
// with a bounded number of reads at once), checks the signature and hands
// the raw body on. A missing, stale or bad signature is a 401 and nothing
// else; only a request whose headers pass has its body read at all.
func (a *Adapter) signed(limit int64, next func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sig, err := signing.ReadSlackHeaders(r.Header, a.now())
		if err != nil {
			a.logger.Warn("slack request refused", "path", r.URL.Path, "err", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		if err := signing.CheckLength(r, limit); err != nil {
			http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
			return
		}
		select {
		case a.reading <- struct{}{}:
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		body, err := signing.ReadBody(w, r, limit)
		<-a.reading
		if err != nil {
			http.Error(w, "request too large or incomplete", http.StatusRequestEntityTooLarge)
			return
		}
		// The timestamp was checked as the headers came; reading the body
		// is bounded well within Tolerance by the server's timeouts.
		if err := sig.Verify(a.cfg.SigningSecret, body); err != nil {
			a.logger.Warn("slack request refused", "path", r.URL.Path, "err", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		next(w, r, body)
	}
}
