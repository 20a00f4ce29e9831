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
// every route but the endpoints signed by their senders (Slack's, the
// hooks'), which answer servers, and on the admin listener's; the
// console's pages carry it themselves too.
func SecurityHeaders(next http.Handler) http.Handler {
	// Set on every response: one slice each, not three per response.
	siteCSPValue := []string{siteCSP}[:1:1]
	frameDenyValue := []string{"DENY"}[:1:1]
	nosniffValue := []string{"nosniff"}[:1:1]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// The values are shared, full slices (length = capacity): a
		// handler that adds to one gets a copy, as net/http's Add does.
		if len(h["Content-Security-Policy"]) == 0 || h["Content-Security-Policy"][0] == "" {
			h["Content-Security-Policy"] = siteCSPValue
		}
		h["X-Frame-Options"] = frameDenyValue
		h["X-Content-Type-Options"] = nosniffValue
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
