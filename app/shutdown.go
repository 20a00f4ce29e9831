package app

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// How long each stage of the shutdown may take at most. Together they
// stay within the 30 s a container platform usually grants after SIGTERM
// (the Helm chart's terminationGracePeriodSeconds); the engine's flush of
// queued messages (bot.Config.FlushTimeout, 10 s) comes between them.
const (
	DrainHTTPFor       = 10 * time.Second
	finishAdaptersFor  = 5 * time.Second
	flushOutboxFor     = 3 * time.Second
	stopIntakeAtLatest = 2 * time.Second
)

// Serve starts a (startup.go's start, in the reverse of the order below)
// on ln, runs it until ctx is done, then shuts down in this order, so
// that nothing still working needs a part already stopped:
//
//  1. stop intake: Slack's Socket Mode and Matrix's sync stop taking
//     events, and the HTTP listeners close (no new chat, webhook or API
//     requests, no new event streams, no new scrapes on the admin
//     listener);
//  2. drain HTTP: requests in flight on both listeners finish, within
//     DrainHTTPFor; event streams end at once (their requests' base
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
// and the caller closes the pools (Close) last. adminLn is the internal
// listener (BOBNET_ADMIN_LISTEN), nil without one; Serve closes both.
func (a *App) Serve(ctx context.Context, ln, adminLn net.Listener) error {
	cfg, logger := a.cfg, a.logger
	// Every part runs under its own context, ended by the shutdown below
	// in order, never by the signal itself (startup.go's start).
	r := a.start(ctx, ln, adminLn, cfg, logger)
	defer r.cancelAll()
	var err error
	select {
	case err = <-r.served: // a listener failed: shut the rest down as well
	case <-ctx.Done():
	}
	logger.Info("BobNet is stopping")

	// 1. Stop intake.
	r.stopIntake()
	waitGroupFor(&r.intakes, stopIntakeAtLatest, logger, "chat intake still stopping")
	// 2. Drain HTTP, on both listeners at once.
	drain, cancelDrain := context.WithTimeout(r.base, DrainHTTPFor)
	var drains sync.WaitGroup
	if r.adminSrv != nil {
		drains.Go(func() { shutdownServer(drain, r.adminSrv, logger, "admin") })
	}
	shutdownServer(drain, r.srv, logger, "public")
	drains.Wait()
	cancelDrain()
	// 3. Finish the adapters' work.
	if a.slack != nil {
		wctx, wcancel := context.WithTimeout(r.base, finishAdaptersFor)
		if werr := a.slack.Wait(wctx); werr != nil {
			logger.Warn("slack work still running at shutdown", "err", werr)
		}
		wcancel()
	}
	// 4. Stop the runs' workers (a card being worked keeps its lease, and
	// another replica takes it when the lease ends), then the engine; it
	// posts what is queued, the runs' news included, before Run returns.
	r.stopRuns()
	<-r.runsDone
	r.stopEngine()
	<-r.engineDone
	if a.matrix != nil {
		a.matrix.Close() // after the engine: Matrix posts went through it
	}
	// 5. Flush the outbox.
	r.stopOutbox()
	<-r.outboxDone
	flush, cancelFlush := context.WithTimeout(r.base, flushOutboxFor)
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
		logger.Warn("HTTP requests still running after the drain time; closing them", "listener", which, "err", err, "drain", DrainHTTPFor)
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
