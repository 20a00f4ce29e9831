package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"
)

// How long each stage of the shutdown may take at most. Together they
// stay within the 30 s a container platform usually grants after SIGTERM
// (the Helm chart's terminationGracePeriodSeconds); the engine's flush of
// queued messages (bot.Config.FlushTimeout, 10 s) comes between them.
const (
	drainHTTPFor       = 10 * time.Second
	finishAdaptersFor  = 5 * time.Second
	flushOutboxFor     = 3 * time.Second
	stopIntakeAtLatest = 2 * time.Second
)

// serve runs a on ln until ctx is done, then shuts down in this order, so
// that nothing still working needs a part already stopped:
//
//  1. stop intake: Slack's Socket Mode and Matrix's sync stop taking
//     events, and the HTTP listeners close (no new chat, webhook or API
//     requests, no new event streams, no new scrapes on the admin
//     listener);
//  2. drain HTTP: requests in flight on both listeners finish, within
//     drainHTTPFor; event streams end at once (their requests' base
//     context is cancelled);
//  3. finish the adapters' work: Slack decisions started after their ack
//     and Matrix reactions being handled, within finishAdaptersFor;
//  4. stop the runs' workers, then the engine: its workers stop reading requests (one mid-plan is
//     left on the stream for another replica), and the messages queued for
//     the chats ("Approved by…", preview redraws) are posted, within the
//     engine's flush time;
//  5. flush the outbox: events recorded meanwhile are sent once more,
//     within flushOutboxFor (what is left stays in Postgres for the next
//     start), and the outbox stops;
//
// and the caller closes the pools (a.close) last. adminLn is the internal
// listener (BOBNET_ADMIN_LISTEN), nil without one; serve closes both.
func (a *app) serve(ctx context.Context, ln, adminLn net.Listener, cfg Config, logger *slog.Logger) error {
	// Every part runs under its own context, ended by the shutdown below
	// in order, never by the signal itself.
	run := context.WithoutCancel(ctx)
	intake, stopIntake := context.WithCancel(run)
	defer stopIntake()
	engineCtx, stopEngine := context.WithCancel(run)
	defer stopEngine()
	outboxCtx, stopOutbox := context.WithCancel(run)
	defer stopOutbox()

	engineDone := make(chan struct{})
	go func() {
		defer close(engineDone)
		_ = a.engine.Run(engineCtx)
	}()
	outboxDone := make(chan struct{})
	go func() {
		defer close(outboxDone)
		a.ext.outbox.Run(outboxCtx)
	}()
	var intakes sync.WaitGroup
	if a.slack != nil && cfg.SlackAppToken != "" {
		intakes.Go(func() {
			// It only returns when its context ends or the connection
			// fails for good; only the latter is worth a word.
			if err := a.slack.RunSocketMode(intake); intake.Err() == nil {
				logger.Error("slack socket mode stopped", "err", err)
			}
		})
	}
	intakes.Go(func() { runMatrix(intake, a.matrix, logger) })
	// Schedules start runs: intake too.
	intakes.Go(func() { a.schedules.Run(intake, a.clock.tick(), a.clock.Now) })
	runsCtx, stopRuns := context.WithCancel(run)
	defer stopRuns()
	runsDone := make(chan struct{})
	go func() {
		defer close(runsDone)
		_ = a.runs.Run(runsCtx)
	}()
	if err := a.model.Ping(ctx); err != nil {
		logger.Warn("the model server does not answer yet; requests get a friendly error until it does", "OPENAI_BASE_URL", cfg.OpenAIBaseURL, "err", err)
	}

	// Shutting down cancels the requests' base context, so long-lived
	// event streams end instead of holding the drain for its whole time.
	base, endStreams := context.WithCancel(run)
	defer endStreams()
	srv := newHTTPServer(a.handler, defaultServerLimits)
	srv.BaseContext = func(net.Listener) context.Context { return base }
	srv.RegisterOnShutdown(endStreams)
	served := make(chan error, 2)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("BobNet is serving", "addr", ln.Addr().String(), "public_url", cfg.PublicURL)
	var adminSrv *http.Server
	if adminLn != nil {
		adminSrv = newHTTPServer(a.admin, defaultServerLimits)
		go func() { served <- adminSrv.Serve(adminLn) }()
		logger.Info("the admin listener serves /metrics, /healthz and /readyz", "addr", adminLn.Addr().String())
	}
	// Starting (package set-up, migrations, first connections) leaves
	// megabytes of garbage; hand those pages back now rather than when the
	// runtime's background scavenger gets to them, so an idle server is
	// small from its first minute.
	debug.FreeOSMemory()
	var err error
	select {
	case err = <-served: // a listener failed: shut the rest down as well
	case <-ctx.Done():
	}
	logger.Info("BobNet is stopping")

	// 1. Stop intake.
	stopIntake()
	waitGroupFor(&intakes, stopIntakeAtLatest, logger, "chat intake still stopping")
	// 2. Drain HTTP, on both listeners at once.
	drain, cancelDrain := context.WithTimeout(run, drainHTTPFor)
	var drains sync.WaitGroup
	if adminSrv != nil {
		drains.Go(func() { shutdownServer(drain, adminSrv, logger, "admin") })
	}
	shutdownServer(drain, srv, logger, "public")
	drains.Wait()
	cancelDrain()
	// 3. Finish the adapters' work.
	if a.slack != nil {
		wctx, wcancel := context.WithTimeout(run, finishAdaptersFor)
		if werr := a.slack.Wait(wctx); werr != nil {
			logger.Warn("slack work still running at shutdown", "err", werr)
		}
		wcancel()
	}
	// 4. Stop the runs' workers (a card being worked keeps its lease, and
	// another replica takes it when the lease ends), then the engine; it
	// posts what is queued, the runs' news included, before Run returns.
	stopRuns()
	<-runsDone
	stopEngine()
	<-engineDone
	if a.matrix != nil {
		a.matrix.Close() // after the engine: Matrix posts went through it
	}
	// 5. Flush the outbox.
	stopOutbox()
	<-outboxDone
	flush, cancelFlush := context.WithTimeout(run, flushOutboxFor)
	for flush.Err() == nil {
		n, ferr := a.ext.outbox.SendDue(flush)
		if ferr != nil || n == 0 {
			break
		}
	}
	cancelFlush()
	logger.Info("BobNet stopped")
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// shutdownServer drains srv within ctx, then closes what still runs.
func shutdownServer(ctx context.Context, srv *http.Server, logger *slog.Logger, which string) {
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn("HTTP requests still running after the drain time; closing them", "listener", which, "err", err, "drain", drainHTTPFor)
		_ = srv.Close()
	}
}

// waitGroupFor waits for wg at most d, logging what if it is still busy.
func waitGroupFor(wg *sync.WaitGroup, d time.Duration, logger *slog.Logger, what string) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		logger.Warn(what, "waited", d)
	}
}
