package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/bobnet/bobnet/adapters/matrix"
	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/adapters/webhook"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/planner"
	boardrun "github.com/bobnet/bobnet/run" // main has a func run
)

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
	close     func()
}

// newApp builds BobNet, one subsystem at a time (the init*.go files), in
// the order of their dependencies; each takes what it needs of the ones
// before it as constructor arguments:
//
//  1. stores: Postgres (migrated) and Redis;
//  2. hooks: the hooks and the outbox of outbound events, which needs
//     only Postgres, and the API token guard;
//  3. engine: the model client, the metrics and the engine, its events
//     going to the outbox; the console surface;
//  4. Slack, then Matrix: they log in, so a wrong token fails the start;
//     each registers with the engine;
//  5. the policy file, written into Postgres;
//  6. the hooks' adapter, which submits to the engine;
//  7. runs: the runs' worker (dispatching to hooks through the outbox)
//     and the scheduler;
//  8. the live board feed, and the HTTP routes over all of the above.
//
// Nothing runs yet but the background loops of steps 4 (re-sealing Slack
// tokens) and 8 (the feed); app.serve starts the rest (startup.go's
// start) and shuts it down in reverse (shutdown.go). On an error newApp
// closes what it built, in reverse; otherwise a.close does, last.
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
	return &app{
		handler: handler, admin: admin, engine: p.engine, model: p.model, slack: slackAdapter, matrix: matrixAdapter,
		ext: ext, runs: runs.worker, schedules: runs.schedules, close: closeAll,
	}, nil
}
