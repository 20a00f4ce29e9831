package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/migrations"
)

// runMigrate applies the migrations.
func runMigrate(ctx context.Context, cfg Config, logger *slog.Logger) error {
	if err := cfg.requireServices(false); err != nil {
		return err
	}
	store, err := board.Open(ctx, cfg.DatabaseURL, logger)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer store.Close()
	n, err := migrations.Apply(ctx, store.Pool(), logger)
	if err != nil {
		return err
	}
	logger.Info("database is up to date", "applied", n)
	return nil
}

// pinger is a dependency /readyz checks.
type pinger interface {
	Ping(ctx context.Context) error
}

// runServe starts everything configured and serves until ctx is done.
func runServe(ctx context.Context, cfg Config, logger *slog.Logger) error {
	if err := cfg.requireServices(false); err != nil {
		return err
	}
	store, err := board.Open(ctx, cfg.DatabaseURL, logger)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer store.Close()
	if _, err := migrations.Apply(ctx, store.Pool(), logger); err != nil {
		return err
	}

	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", readyHandler(map[string]pinger{"postgres": store}))
	r.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))

	web := board.NewWeb(store, logger)
	web.PageRoutes(r)
	r.Group(func(r chi.Router) {
		r.Use(requireToken(cfg.APIToken))
		web.APIRoutes(r)
	})

	return serveHTTP(ctx, cfg.Listen, cfg.PublicURL, r, logger)
}

// serveHTTP serves h on addr until ctx is done, then shuts down gracefully.
func serveHTTP(ctx context.Context, addr, publicURL string, h http.Handler, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("BOBNET_LISTEN: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("BobNet is serving", "addr", ln.Addr().String(), "public_url", publicURL)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info("BobNet stopped")
	return nil
}

// readyHandler answers 200 when every dependency answers a ping, else 503
// naming the ones that do not.
func readyHandler(deps map[string]pinger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		failed := map[string]string{}
		for name, d := range deps {
			if err := d.Ping(ctx); err != nil {
				failed[name] = err.Error()
			}
		}
		if len(failed) > 0 {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "failing": failed})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
