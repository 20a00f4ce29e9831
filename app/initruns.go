package app

import (
	"log/slog"
	"time"

	boardrun "github.com/bobnet/bobnet/run" // main has a func run
	"github.com/bobnet/bobnet/store"
)

// runParts are what runs boards: the worker that works (or dispatches to
// hooks) the cards of running runs, and the scheduler that starts runs.
type runParts struct {
	worker    *boardrun.Worker
	schedules *boardrun.Scheduler
	// clock is the schedules' time: the wall clock, or BOBNET_TEST_CLOCK's.
	clock *scheduleClock
}

// initRuns builds the runs' worker, dispatching hook runners' cards
// through the outbox (ext), and the scheduler.
func initRuns(cfg Config, db *store.Store, p *planning, ext *integrations, logger *slog.Logger) *runParts {
	// A replica that stops working a run card loses it when its lease ends,
	// as a request it stopped planning (BOBNET_RECLAIM_IDLE).
	w := boardrun.NewWorker(db, p.model, p.engine, p.engine, p.series, p.profiles, boardrun.Config{
		Workers: cfg.RunWorkers, Lease: cfg.ReclaimIdle, Poll: 2 * time.Second,
		Hooks: &boardrun.Hooks{Store: db, Events: ext.outbox, PublicURL: cfg.PublicURL, Keys: ext.cardKeys},
	}, logger)
	for _, name := range w.HookNames() {
		if _, ok := ext.cardKeys[name]; !ok {
			logger.Warn("a profile's runner names a hook BOBNET_HOOK_SECRETS does not have; its cards' attempts will fail and their runs stop", "runner", "hook:"+name)
		}
	}
	clock := newScheduleClock(cfg.TestClock, logger)
	if cfg.TestClock != "" {
		logger.Warn("BOBNET_TEST_CLOCK is set: schedules run on the time in its file, for tests only", "file", cfg.TestClock)
	}
	return &runParts{worker: w, schedules: boardrun.NewScheduler(db, p.engine, w.Runners(), cfg.RunDeadline, logger), clock: clock}
}
