package app

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"

	"github.com/bobnet/bobnet/adapters/matrix"
	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/adapters/webhook"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/planner"
	boardrun "github.com/bobnet/bobnet/run" // as in initruns.go
)

// App is BobNet wired together: its HTTP handlers and the parts to run.
// New builds it, Serve runs it until its context ends and shuts it down
// in order, Close closes what New opened. `bobnet serve` (Run) and the
// system tests start BobNet this one way.
type App struct {
	cfg     Config
	logger  *slog.Logger
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
	closeAll  func()
}

// New builds BobNet, one subsystem at a time (the init*.go files), in
// the order of their dependencies; each takes what it needs of the ones
// before it as constructor arguments:
//
//  1. stores: Postgres (migrated) and Redis;
//  2. hooks: the hooks and the outbox of outbound events, which needs
//     only Postgres, and the API token guard;
//  3. engine: the model client, the metrics and the engine, its events
//     going to the outbox and the hooks' deciders deciding in their
//     channels; the console surface;
//  4. Slack, then Matrix: they log in, so a wrong token fails the start;
//     each registers with the engine (the one cycle, engine and chat
//     surfaces, is broken by registration: see initEngine);
//  5. the policy file, written into Postgres;
//  6. the hooks' adapter, which submits to the engine;
//  7. runs: the runs' worker (dispatching to hooks through the outbox)
//     and the scheduler;
//  8. the live board feed, and the HTTP routes over all of the above.
//
// Nothing runs yet but the background loops of steps 4 (re-sealing Slack
// tokens) and 8 (the feed); Serve starts the rest (start, below) and
// shuts it down in reverse (shutdown.go). On an error New closes what it
// built, in reverse; otherwise Close does, last.
func New(ctx context.Context, cfg Config, logger *slog.Logger) (_ *App, err error) {
	if err := cfg.RequireServices(true); err != nil {
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
	st, err := initStores(ctx, cfg, logger) // 1
	if err != nil {
		return nil, err
	}
	closers = append(closers, st.close)
	ext, err := initHooks(cfg, st.db, logger) // 2
	if err != nil {
		return nil, err
	}
	p, err := initEngine(cfg, st, ext, logger) // 3
	if err != nil {
		return nil, err
	}
	slackAdapter, stopResealing, err := initSlack(ctx, cfg, st, p.engine, logger) // 4
	if err != nil {
		return nil, err
	}
	closers = append(closers, stopResealing)
	matrixAdapter, err := initMatrix(ctx, cfg, st, p.engine, logger)
	if err != nil {
		return nil, err
	}
	if err := loadPolicyFile(ctx, cfg, st.db); err != nil { // 5
		return nil, err
	}
	hooks := webhook.New(ext.hooks, p.engine, logger)     // 6
	runs := initRuns(cfg, st.db, p, ext, logger)          // 7
	feed, stopFeed := startLiveBoards(ctx, st.db, logger) // 8
	closers = append(closers, stopFeed)
	handler, admin := initHTTP(cfg, routed{stores: st, planning: p, ext: ext, hooks: hooks, slack: slackAdapter, runs: runs, feed: feed}, logger)
	return &App{
		cfg: cfg, logger: logger, handler: handler, admin: admin, engine: p.engine, model: p.model, slack: slackAdapter, matrix: matrixAdapter,
		ext: ext, runs: runs.worker, schedules: runs.schedules, clock: runs.clock, closeAll: closeAll,
	}, nil
}

// Close closes what New opened (the pools, the background loops), in
// reverse; after Serve has returned.
func (a *App) Close() { a.closeAll() }

// Handler is what the public listener serves: every route of BobNet.
func (a *App) Handler() http.Handler { return a.handler }

// running is what start started, for serve's shutdown (shutdown.go) to
// stop in its numbered order.
type running struct {
	// base is every part's context: ctx without its cancel, so the signal
	// ends nothing by itself.
	base context.Context
	// Shutdown step 1: the chat intake (Slack's Socket Mode, Matrix's
	// sync, the schedules) and the listeners.
	stopIntake func()
	intakes    sync.WaitGroup
	srv        *http.Server
	adminSrv   *http.Server // nil without an admin listener
	served     chan error   // a listener's Serve returned
	// Step 4: the runs' workers, then the engine.
	stopRuns, stopEngine func()
	runsDone, engineDone chan struct{}
	// Step 5: the outbox.
	stopOutbox func()
	outboxDone chan struct{}
	// endStreams cancels the requests' base context (step 2).
	endStreams func()
}

// start starts a's parts in the reverse of the shutdown's order
// (shutdown.go), so that each starts after what it needs and none takes
// in work before what does the work runs:
//
//  5. the outbox, which sends the events of everything after it;
//  4. the engine (its workers, sweeps and queued posts), then the runs'
//     workers, which tell the engine;
//  3. (the adapters' work has nothing to start: it comes with intake)
//  2. and 1. intake: Slack's Socket Mode, Matrix's sync and the
//     schedules, then the HTTP listeners, public and admin.
//
// Before the listeners it asks the model server once, only to warn early
// (as the engine takes requests already, a slow answer delays nothing
// but the listeners).
// Each part runs under a context of its own, ended by the shutdown.
func (a *App) start(ctx context.Context, ln, adminLn net.Listener, cfg Config, logger *slog.Logger) *running {
	r := &running{base: context.WithoutCancel(ctx), served: make(chan error, 2)}
	// 5. The outbox.
	var outboxCtx context.Context
	outboxCtx, r.stopOutbox = context.WithCancel(r.base)
	r.outboxDone = make(chan struct{})
	go func() {
		defer close(r.outboxDone)
		a.ext.outbox.Run(outboxCtx)
	}()
	// 4. The engine, then the runs' workers.
	var engineCtx, runsCtx context.Context
	engineCtx, r.stopEngine = context.WithCancel(r.base)
	r.engineDone = make(chan struct{})
	go func() {
		defer close(r.engineDone)
		_ = a.engine.Run(engineCtx)
	}()
	runsCtx, r.stopRuns = context.WithCancel(r.base)
	r.runsDone = make(chan struct{})
	go func() {
		defer close(r.runsDone)
		_ = a.runs.Run(runsCtx)
	}()
	// 1. Intake: chat, schedules (they start runs), then HTTP.
	var intake context.Context
	intake, r.stopIntake = context.WithCancel(r.base)
	if a.slack != nil && cfg.SlackAppToken != "" {
		r.intakes.Go(func() {
			// It only returns when its context ends or the connection
			// fails for good; only the latter is worth a word.
			if err := a.slack.RunSocketMode(intake); intake.Err() == nil {
				logger.Error("slack socket mode stopped", "err", err)
			}
		})
	}
	r.intakes.Go(func() { runMatrix(intake, a.matrix, logger) })
	r.intakes.Go(func() { a.schedules.Run(intake, a.clock.tick(), a.clock.Now) })
	if err := a.model.Ping(ctx); err != nil {
		logger.Warn("the model server does not answer yet; requests get a friendly error until it does", "OPENAI_BASE_URL", cfg.OpenAIBaseURL, "err", err)
	}
	// Shutting down cancels the requests' base context, so long-lived
	// event streams end instead of holding the drain for its whole time.
	var requests context.Context
	requests, r.endStreams = context.WithCancel(r.base)
	r.srv = newHTTPServer(a.handler, defaultServerLimits)
	r.srv.BaseContext = func(net.Listener) context.Context { return requests }
	r.srv.RegisterOnShutdown(r.endStreams)
	go func() { r.served <- r.srv.Serve(ln) }()
	logger.Info("BobNet is serving", "addr", ln.Addr().String(), "public_url", cfg.PublicURL)
	if adminLn != nil {
		r.adminSrv = newHTTPServer(a.admin, defaultServerLimits)
		go func() { r.served <- r.adminSrv.Serve(adminLn) }()
		logger.Info("the admin listener serves /metrics, /healthz and /readyz", "addr", adminLn.Addr().String())
	}
	// Starting (package set-up, migrations, first connections) leaves
	// megabytes of garbage; hand those pages back now rather than when the
	// runtime's background scavenger gets to them, so an idle server is
	// small from its first minute.
	debug.FreeOSMemory()
	// The same for the executable's pages that only starting read.
	if n, err := releaseStartPages(); err != nil {
		logger.Debug("start-up pages of the executable kept", "err", err)
	} else {
		logger.Debug("start-up pages of the executable handed back", "bytes", n)
	}
	return r
}

// cancelAll ends every part's context at once: serve's safety net once
// its ordered shutdown is done.
func (r *running) cancelAll() {
	r.stopIntake()
	r.endStreams()
	r.stopRuns()
	r.stopEngine()
	r.stopOutbox()
}
