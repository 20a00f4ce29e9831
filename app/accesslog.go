package app

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

// logRequests writes one line per HTTP request: at debug level normally,
// as a warning when BobNet answered with a server error. Only the path is
// logged — never the query, which may carry the event stream's access
// token, nor any header. A handler that panics is logged with its stack
// and answered 500, the rest of the server unharmed.
//
// Not chi's middleware package: it links net/http/pprof, and with it the
// runtime's memory profiler, which then samples every server's heap.
func logRequests(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rec := &recorder{ResponseWriter: w}
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p) // net/http's way to drop a connection quietly
					}
					logger.Error("http handler panicked", "method", r.Method, "path", r.URL.Path,
						"panic", p, "stack", string(debug.Stack()))
					if rec.status == 0 {
						http.Error(rec, "internal error", http.StatusInternalServerError)
					}
				}
				status := rec.status
				if status == 0 {
					status = http.StatusOK
				}
				level := slog.LevelDebug
				if status >= 500 {
					level = slog.LevelWarn
				}
				if !logger.Enabled(r.Context(), level) {
					return // most requests at the default level: no line to build
				}
				logger.Log(r.Context(), level, "http request", "method", r.Method, "path", r.URL.Path,
					"status", status, "bytes", rec.bytes, "duration", time.Since(start))
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

// recorder notes the status and the size of a response. Flushing,
// deadlines and hijacking reach the server's writer through Unwrap
// (http.ResponseController).
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

// Unwrap gives http.ResponseController the server's writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
