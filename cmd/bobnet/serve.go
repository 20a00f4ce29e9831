package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/adapters/console"
	"github.com/bobnet/bobnet/adapters/matrix"
	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/pending"
	"github.com/bobnet/bobnet/httpjson"
	"github.com/bobnet/bobnet/metrics"
	"github.com/bobnet/bobnet/planner"
	boardrun "github.com/bobnet/bobnet/run" // main has a func run
	"github.com/bobnet/bobnet/sse"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/web"

	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/migrations"
)

// runMigrate applies the migrations.
func runMigrate(ctx context.Context, cfg Config, logger *slog.Logger) error {
	if err := cfg.requireServices(false); err != nil {
		return err
	}
	db, err := store.Open(ctx, cfg.DatabaseURL, logger)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer db.Close()
	n, err := migrations.Apply(ctx, db.Pool(), logger)
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
	// admin is what the internal listener serves (BOBNET_ADMIN_LISTEN),
	// nil without one.
	admin     http.Handler
	engine    *bot.Engine
	model     *planner.Client
	slack     *slack.Adapter  // nil when Slack is not configured
	matrix    *matrix.Adapter // nil when Matrix is not configured
	ext       *integrations
	runs      *boardrun.Worker
	schedules *boardrun.Scheduler
	clock     *scheduleClock
	close     func()
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
	db, err := store.Open(ctx, cfg.DatabaseURL, logger)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	closers = append(closers, db.Close)
	if _, err := migrations.Apply(ctx, db.Pool(), logger); err != nil {
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
	queue := pending.NewQueue(rdb, cfg.RedisPrefix)
	series := metrics.New()
	series.WatchQueue(queue, logger)
	engine, err := bot.New(bot.Config{
		ProposalTTL:        cfg.ProposalTTL,
		Admins:             cfg.Admins,
		AnyMemberMayDecide: cfg.AnyMemberDecides,
		PublicURL:          cfg.PublicURL,
		Workers:            cfg.Workers,
		ReclaimIdle:        cfg.ReclaimIdle,
		UserRate:           cfg.UserRate,
		ChannelRate:        cfg.ChannelRate,
		Profiles:           profiles,
		RunDeadline:        cfg.RunDeadline,
	}, bot.Deps{
		Planner: series.Planner(model),
		Boards:  db, History: db, Decisions: db, Audit: db, Deliveries: db,
		Cards: db, Assigned: db, Policies: db, Usage: db, Runs: db,
		Proposals: redisStore, Requests: redisStore, Queue: queue, Pending: redisStore, Reminders: redisStore,
		Observer: series,
	}, logger)
	if err != nil {
		return nil, err
	}
	con := console.New(engine, db, logger)
	engine.Register(bot.SourceConsole, bot.Registration{Poster: con})
	var slackAdapter *slack.Adapter
	if cfg.SlackBotToken != "" || cfg.slackOAuth() {
		scfg := slack.Config{
			BotToken: cfg.SlackBotToken, SigningSecret: cfg.SlackSigningSecret, AppToken: cfg.SlackAppToken,
			APIURL: cfg.SlackAPIURL, PublicURL: cfg.PublicURL,
		}
		if cfg.slackOAuth() {
			var installs *store.SlackInstallations
			if scfg.OAuth, installs, err = slackOAuthConfig(ctx, cfg, db, logger); err != nil {
				return nil, err
			}
			closers = append(closers, startResealing(ctx, installs, resealEvery, logger))
		}
		slackAdapter, err = slack.New(ctx, scfg, engine, redisStore, logger)
		if err != nil {
			return nil, err
		}
		engine.Register(bot.SourceSlack, bot.Registration{Poster: slackAdapter, Notifier: slackAdapter, Reminders: slackAdapter, Groups: slackAdapter})
	}
	matrixAdapter, err := newMatrix(ctx, cfg, engine, db, rdb, redisStore, logger)
	if err != nil {
		return nil, err
	}

	if err := loadPolicyFile(ctx, cfg, db); err != nil {
		return nil, err
	}
	ext, err := newIntegrations(cfg, db, engine, logger)
	if err != nil {
		return nil, err
	}

	r := chi.NewRouter()
	r.Use(logRequests(logger), console.SecurityHeaders)
	ready := readyHandler(map[string]pinger{"postgres": db, "redis": redisStore}, logger)
	healthRoutes(r, ready)
	// The API's guards: cross-site and rebinding first, then the token.
	apiGuards := []func(http.Handler) http.Handler{
		httpapi.Guard(httpapi.GuardConfig{PublicURL: cfg.PublicURL, Listen: cfg.Listen, Tokenless: cfg.APIToken == ""}),
		ext.guard.Middleware,
	}
	// On the public listener the metrics need an admin token
	// (apitoken.RequiredScope); the admin listener serves them without.
	r.With(apiGuards...).Handle("/metrics", series.Handler())
	var admin http.Handler
	if cfg.AdminListen != "" {
		admin = adminHandler(series.Handler(), ready, logger)
	}

	// A replica that stops working a run card loses it when its lease ends,
	// as a request it stopped planning (BOBNET_RECLAIM_IDLE).
	runs := boardrun.NewWorker(db, model, engine, engine, series, profiles, boardrun.Config{Workers: cfg.RunWorkers, Lease: cfg.ReclaimIdle, Poll: 2 * time.Second}, logger)
	runs.UseHooks(db, ext.outbox, cfg.PublicURL, ext.cardKeys)
	for _, name := range runs.HookNames() {
		if _, ok := ext.cardKeys[name]; !ok {
			logger.Warn("a profile's runner names a hook BOBNET_HOOK_SECRETS does not have; its cards' attempts will fail and their runs stop", "runner", "hook:"+name)
		}
	}
	pages := web.New(db, logger)
	// One cap on event streams per caller and in all, whichever kind.
	streams := sse.New(sse.Limits{PerCaller: cfg.StreamsPerCaller, Total: cfg.Streams})
	pages.UseStreams(streams)
	closers = append(closers, startLiveBoards(ctx, db, pages, logger))
	pages.PageRoutes(r)
	boardrun.NewPages(db, logger).Routes(r)
	con.PageRoutes(r)
	clock := newScheduleClock(cfg.TestClock, logger)
	if cfg.TestClock != "" {
		logger.Warn("BOBNET_TEST_CLOCK is set: schedules run on the time in its file, for tests only", "file", cfg.TestClock)
	}
	httpapi.API{
		Guards:    apiGuards,
		Chat:      httpapi.NewChat(httpapi.ChatDeps{Engine: engine, Channels: con, Successors: db, Boards: db, Requests: redisStore, Streams: streams}, logger),
		Cards:     httpapi.NewCards(engine, db, logger),
		Policies:  httpapi.NewPolicies(db, engine, logger),
		Runs:      httpapi.NewRuns(db, engine, runs.Runners(), cfg.RunDeadline, cfg.PublicURL),
		Schedules: httpapi.NewSchedules(db, clock.Now),
		Boards:    httpapi.NewBoards(db, pages.Events, logger),
		Outputs:   httpapi.NewOutputs(db, engine),
		Usage:     httpapi.NewUsage(engine, logger),
		Tokens:    httpapi.NewTokens(ext.tokens, logger),
	}.Routes(r)
	if slackAdapter != nil && cfg.SlackSigningSecret != "" {
		slackAdapter.Routes(r)        // signed by Slack, not by the API token
		slackAdapter.InstallRoutes(r) // public pages; only with OAuth installs
	}
	ext.hooks.Routes(r) // signed by their senders, not by the API token
	return &app{handler: r, admin: admin, engine: engine, model: model, slack: slackAdapter, matrix: matrixAdapter, ext: ext, runs: runs,
		schedules: boardrun.NewScheduler(db, engine, runs.Runners(), cfg.RunDeadline, logger), clock: clock, close: closeAll}, nil
}

// runServe starts everything configured and serves until ctx is done,
// then shuts down in order (shutdown.go).
func runServe(ctx context.Context, cfg Config, logger *slog.Logger) error {
	a, err := newApp(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer a.close()
	ln, err := listen("BOBNET_LISTEN", cfg.Listen)
	if err != nil {
		return err
	}
	var adminLn net.Listener
	if cfg.AdminListen != "" {
		if adminLn, err = listen("BOBNET_ADMIN_LISTEN", cfg.AdminListen); err != nil {
			_ = ln.Close()
			return err
		}
	}
	return a.serve(ctx, ln, adminLn, cfg, logger)
}

// serverLimits bound how long a connection may take over each part of an
// exchange, so a slow or stalled client cannot hold a connection, its
// goroutine and its buffers for long.
type serverLimits struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// defaultServerLimits: a request (body included) is read within 30 s and
// answered within 60 s; an idle keep-alive connection lives 2 minutes.
// Event streams lift the write deadline for themselves.
var defaultServerLimits = serverLimits{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 60 * time.Second, Idle: 2 * time.Minute}

// newHTTPServer is BobNet's HTTP server for h with limits.
func newHTTPServer(h http.Handler, l serverLimits) *http.Server {
	return &http.Server{
		Handler: h, ReadHeaderTimeout: l.ReadHeader, ReadTimeout: l.Read, WriteTimeout: l.Write, IdleTimeout: l.Idle,
		MaxHeaderBytes: 64 << 10,
	}
}

// listen opens one of BobNet's listeners, naming its setting (env) when
// it cannot.
func listen(env, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s: %s is already in use by another program; stop it or choose a free address: %w", env, addr, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", env, err)
	}
	return ln, nil
}

// readyHandler answers 200 when every dependency answers a ping, else 503
// naming the ones that do not.
func readyHandler(deps map[string]pinger, logger *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		// Unauthenticated: it names what is down, never how to reach it
		// (addresses, users, database names go to the log).
		failed := map[string]string{}
		for name, d := range deps {
			if err := d.Ping(ctx); err != nil {
				failed[name] = "unavailable"
				logger.Warn("readiness check failed", "dependency", name, "err", err)
			}
		}
		if len(failed) > 0 {
			httpjson.Write(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "failing": failed})
			return
		}
		httpjson.Write(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}
