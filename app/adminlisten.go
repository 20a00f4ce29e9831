package app

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/httpjson"
	"github.com/bobnet/bobnet/web"
)

// healthRoutes mounts /healthz and /readyz, which every listener serves
// without a token.
func healthRoutes(r chi.Router, ready http.Handler) {
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		httpjson.Write(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Method(http.MethodGet, "/readyz", ready)
}

// adminHandler is what the internal listener (BOBNET_ADMIN_LISTEN)
// serves: /metrics without a token, the health routes, and nothing else
// (a binary built with -tags pprof adds /debug/pprof/: profiling.go).
// Whatever reaches that address is trusted to read the metrics, so no
// route of the public listener (API, console, pages, Slack, hooks) may be
// answered there: every other path is a 404.
func adminHandler(metrics, ready http.Handler, logger *slog.Logger) http.Handler {
	r := chi.NewRouter()
	r.Use(logRequests(logger), web.SecurityHeaders)
	healthRoutes(r, ready)
	r.Method(http.MethodGet, "/metrics", metrics)
	profiling(r)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		httpjson.Error(w, http.StatusNotFound, "no such route on the admin listener (BOBNET_ADMIN_LISTEN): it serves GET /metrics, /healthz and /readyz only")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		httpjson.Error(w, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+" (the admin listener serves GET only)")
	})
	return r
}
