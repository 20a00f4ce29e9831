package console

import "net/http"

// pageCSP is the Content-Security-Policy of a response that sets none of
// its own: its own origin only, and never inside a frame.
const pageCSP = "default-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"

// SecurityHeaders gives every response the headers that keep BobNet's
// pages out of other sites' frames and keep browsers from guessing
// content types: Content-Security-Policy (frame-ancestors 'none'; a
// handler may set a stricter policy of its own, which must keep
// frame-ancestors 'none'), X-Frame-Options DENY for browsers that predate
// frame-ancestors, and X-Content-Type-Options nosniff. serve mounts it on
// the whole router; the console's pages carry it themselves too.
func SecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if h.Get("Content-Security-Policy") == "" {
			h.Set("Content-Security-Policy", pageCSP)
		}
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}
