package main

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5/middleware"
)

// logRequests writes one line per HTTP request: at debug level normally,
// as a warning when BobNet answered with a server error. Only the path is
// logged — never the query, which may carry the event stream's access
// token, nor any header.
func logRequests(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			level := slog.LevelDebug
			if status >= 500 {
				level = slog.LevelWarn
			}
			logger.Log(r.Context(), level, "http request", "method", r.Method, "path", r.URL.Path,
				"status", status, "bytes", ww.BytesWritten(), "duration", time.Since(start))
		})
	}
}
