package web

import "net/http"

// siteCSP is the Content-Security-Policy of a response that sets none of
// its own: its own origin only, and never inside a frame.
const siteCSP = "default-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"

// SecurityHeaders gives every response the headers that keep BobNet's
// pages out of other sites' frames and keep browsers from guessing
// content types: Content-Security-Policy (frame-ancestors 'none'; a
// handler may set a stricter policy of its own, which must keep
// frame-ancestors 'none'), X-Frame-Options DENY for browsers that predate
// frame-ancestors, and X-Content-Type-Options nosniff. serve mounts it on
// the whole router (and the admin listener's); the console's pages carry
// it themselves too.
func SecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if h.Get("Content-Security-Policy") == "" {
			h.Set("Content-Security-Policy", siteCSP)
		}
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// policy is what a page says of itself besides its type: its own
// Content-Security-Policy, and when set its Referrer-Policy and
// Cache-Control. Every page is also nosniff.
type policy struct {
	CSP, Referrer, Cache string
}

// writePage sends a drawn page with its headers.
func writePage(w http.ResponseWriter, status int, p policy, page []byte) error {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	if p.CSP != "" {
		h.Set("Content-Security-Policy", p.CSP)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	if p.Referrer != "" {
		h.Set("Referrer-Policy", p.Referrer)
	}
	if p.Cache != "" {
		h.Set("Cache-Control", p.Cache)
	}
	w.WriteHeader(status)
	_, err := w.Write(page)
	return err
}
