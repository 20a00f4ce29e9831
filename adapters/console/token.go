package console

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// RequireToken guards the API with a bearer token. With an empty token it
// lets everything through (the caller keeps such a server on loopback).
// EventSource cannot send headers, so only the event stream may pass the
// token as ?access_token= instead.
func RequireToken(token string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if token == "" {
			return next
		}
		want := []byte(token)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok && strings.HasSuffix(r.URL.Path, "/events") {
				got, ok = r.URL.Query().Get("access_token"), true
			}
			if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="bobnet"`)
				writeError(w, http.StatusUnauthorized, "missing or wrong API token: send Authorization: Bearer <BOBNET_API_TOKEN>")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
