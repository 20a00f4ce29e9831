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
	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/adapters/console"
	"github.com/bobnet/bobnet/adapters/matrix"
	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/pending"
	"github.com/bobnet/bobnet/planner"

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

// app is BobNet wired together: its HTTP handler and the engine to run.
type app struct {
	handler http.Handler
	engine  *bot.Engine
	model   *planner.Client
	slack   *slack.Adapter  // nil when Slack is not configured
	matrix  *matrix.Adapter // nil when Matrix is not configured
	close   func()
}

// newApp connects to Postgres and Redis, migrates, and wires the engine,
// the adapters and the HTTP routes.
func newApp(ctx context.Context, cfg Config, logger *slog.Logger) (_ *app, err error) {
	if err := cfg.requireServices(true); err != nil {
		return nil, err
	}
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	store, err := board.Open(ctx, cfg.DatabaseURL, logger)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	closers = append(closers, store.Close)
	if _, err := migrations.Apply(ctx, store.Pool(), logger); err != nil {
		return nil, err
	}
	ropts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(ropts)
	closers = append(closers, func() { _ = rdb.Close() })
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("REDIS_URL: cannot reach Redis: %w", err)
	}

	profiles := planner.DefaultProfiles()
	if cfg.ProfilesDir != "" {
		if profiles, err = planner.LoadProfiles(cfg.ProfilesDir); err != nil {
			return nil, fmt.Errorf("BOBNET_PROFILES_DIR: %w", err)
		}
	}
	model := planner.NewClient(planner.ClientConfig{
		BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey, Model: cfg.Model, Timeout: cfg.PlanTimeout,
	}, logger)
	redisStore := pending.NewStore(rdb, cfg.RedisPrefix)
	engine, err := bot.New(bot.Config{
		ProposalTTL:        cfg.ProposalTTL,
		Admins:             cfg.Admins,
		AnyMemberMayDecide: cfg.AnyMemberDecides,
		PublicURL:          cfg.PublicURL,
		Workers:            cfg.Workers,
		UserRate:           bot.RateLimit{N: 20, Per: time.Minute},
		ChannelRate:        bot.RateLimit{N: 60, Per: time.Minute},
		Profiles:           profiles,
	}, bot.Deps{Planner: model, Boards: store, Proposals: redisStore, Requests: redisStore, Queue: pending.NewQueue(rdb, cfg.RedisPrefix)}, logger)
	if err != nil {
		return nil, err
	}
	con := console.New(engine, logger)
	engine.SetPoster(bot.SourceConsole, con)
	var slackAdapter *slack.Adapter
	if cfg.SlackBotToken != "" {
		slackAdapter, err = slack.New(ctx, slack.Config{
			BotToken: cfg.SlackBotToken, SigningSecret: cfg.SlackSigningSecret, AppToken: cfg.SlackAppToken,
			APIURL: cfg.SlackAPIURL, PublicURL: cfg.PublicURL,
		}, engine, redisStore, logger)
		if err != nil {
			return nil, err
		}
		engine.SetPoster(bot.SourceSlack, slackAdapter)
	}
	matrixAdapter, err := newMatrix(ctx, cfg, engine, store, rdb, redisStore, logger)
	if err != nil {
		return nil, err
	}

	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", readyHandler(map[string]pinger{"postgres": store, "redis": redisStore}))
	r.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))

	web := board.NewWeb(store, logger)
	web.PageRoutes(r)
	con.PageRoutes(r)
	r.Group(func(r chi.Router) {
		r.Use(console.RequireToken(cfg.APIToken))
		web.APIRoutes(r)
		con.APIRoutes(r)
	})
	if slackAdapter != nil && cfg.SlackSigningSecret != "" {
		slackAdapter.Routes(r) // signed by Slack, not by the API token
	}
	return &app{handler: r, engine: engine, model: model, slack: slackAdapter, matrix: matrixAdapter, close: closeAll}, nil
}

// runServe starts everything configured and serves until ctx is done.
func runServe(ctx context.Context, cfg Config, logger *slog.Logger) error {
	a, err := newApp(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer a.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	engineDone := make(chan struct{})
	go func() {
		defer close(engineDone)
		_ = a.engine.Run(ctx)
	}()
	if a.slack != nil && cfg.SlackAppToken != "" {
		go func() {
			// It only returns when its context ends or the connection
			// fails for good; only the latter is worth a word.
			if err := a.slack.RunSocketMode(ctx); ctx.Err() == nil {
				logger.Error("slack socket mode stopped", "err", err)
			}
		}()
	}
	matrixDone := make(chan struct{})
	go func() { defer close(matrixDone); runMatrix(ctx, a.matrix, logger) }()
	defer func() { cancel(); <-matrixDone }()
	if err := a.model.Ping(ctx); err != nil {
		logger.Warn("the model server does not answer yet; requests get a friendly error until it does", "OPENAI_BASE_URL", cfg.OpenAIBaseURL, "err", err)
	}
	err = serveHTTP(ctx, cfg.Listen, cfg.PublicURL, a.handler, logger)
	cancel()
	<-engineDone
	return err
}

// serveHTTP serves h on addr until ctx is done, then shuts down gracefully.
func serveHTTP(ctx context.Context, addr, publicURL string, h http.Handler, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("BOBNET_LISTEN: %w", err)
	}
	// Shutting down cancels the requests' base context, so long-lived event
	// streams end instead of holding the shutdown for its whole timeout.
	base, endStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer endStreams()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return base }}
	srv.RegisterOnShutdown(endStreams)
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
