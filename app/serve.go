package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/bobnet/bobnet/httpjson"
	"github.com/bobnet/bobnet/migrations"
	"github.com/bobnet/bobnet/store"
)

// Migrate applies the migrations: `bobnet migrate`.
func Migrate(ctx context.Context, cfg Config, logger *slog.Logger) error {
	if err := cfg.RequireServices(false); err != nil {
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

// Run is `bobnet serve`: it builds BobNet, opens its listeners, and
// serves until ctx is done, then shuts down in order (shutdown.go).
func Run(ctx context.Context, cfg Config, logger *slog.Logger) error {
	tuneGC(os.LookupEnv)
	a, err := New(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer a.Close()
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
	return a.Serve(ctx, ln, adminLn)
}

// gcPercent is the collector's target for `bobnet serve` when GOGC is not
// in its environment: the heap may grow to three times what is live
// before a collection instead of twice. Under load the collector then
// works half as often (it is an eighth of the CPU of a burst of previews
// at the default); idle memory stays as it was, since starting hands its
// garbage back to the system (startup.go) and an idle heap is small.
const gcPercent = 200

// tuneGC sets gcPercent unless the environment (lookup) sets GOGC.
func tuneGC(lookup func(string) (string, bool)) {
	if _, set := lookup("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
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
