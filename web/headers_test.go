package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// SecurityHeaders gives a response the site's policy when its handler set
// none, keeps a handler's own stricter one, and always forbids framing
// and sniffing.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	const own = "default-src 'none'; frame-ancestors 'none'"
	for _, tt := range []struct {
		name, set, want string
	}{
		{"none of its own", "", siteCSP},
		{"its own", own, own},
	} {
		h := SecurityHeaders(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if tt.set != "" {
				w.Header().Set("Content-Security-Policy", tt.set)
			}
			w.WriteHeader(http.StatusTeapot)
		}))
		// The middleware sets its headers before the handler runs, so a
		// handler's own policy replaces the site's.
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		got := rec.Result().Header
		if got.Get("Content-Security-Policy") != tt.want || got.Get("X-Frame-Options") != "DENY" || got.Get("X-Content-Type-Options") != "nosniff" || rec.Code != http.StatusTeapot {
			t.Errorf("%s: %d %v", tt.name, rec.Code, got)
		}
	}
}
