package systemtest

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/app"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

// testApp is the whole of BobNet on real Postgres and Redis, started by
// start as `bobnet serve` starts it.
type testApp struct {
	URL string
	// AdminURL is the admin listener's (withAdminListener), else "".
	AdminURL string
	// Model is the scripted model (unasked when the test's settings name
	// a model server of their own, OPENAI_BASE_URL).
	Model *plannertest.Server
	DB    string // its DATABASE_URL
	// App is what app.New built: its handler for the tests that walk
	// its routes.
	App   *app.App
	token string
	// stop shuts it down as a signal does (app.App.Serve's ordered
	// shutdown, then Close) and returns what Serve returned; the test's
	// cleanup calls it too.
	stop func() error
}

// startOptions are what the options of start set.
type startOptions struct {
	env      map[string]string
	logger   func(app.Config) *slog.Logger
	admin    bool
	startErr *error
}

// option changes how start starts BobNet.
type option func(*startOptions)

// withEnv adds settings, as environment variables, over start's own:
// a fresh database (DATABASE_URL), the test Redis under a fresh prefix
// (REDIS_URL, BOBNET_REDIS_PREFIX), the scripted model (OPENAI_BASE_URL,
// BOBNET_MODEL) and the listener's address (BOBNET_PUBLIC_URL). Starting
// again with the same settings is a restart.
func withEnv(env map[string]string) option {
	return func(o *startOptions) { maps.Copy(o.env, env) }
}

// withLogger logs through the logger made from the configuration, rather
// than the tests' quiet one.
func withLogger(logger func(app.Config) *slog.Logger) option {
	return func(o *startOptions) { o.logger = logger }
}

// withAdminListener opens the admin listener (BOBNET_ADMIN_LISTEN) too, on
// a free port; testApp.AdminURL is its address.
func withAdminListener() option {
	return func(o *startOptions) { o.admin = true }
}

// startFails is for a start that must fail: its error (the configuration's
// or app.New's) goes to *err, and start returns nil instead of failing the
// test.
func startFails(err *error) option {
	return func(o *startOptions) { o.startErr = err }
}

// start starts BobNet, serving until the test ends (or testApp.stop). It
// skips the test without REDIS_URL (bottest.Redis) or DATABASE_URL
// (storetest).
func start(t testing.TB, opts ...option) *testApp {
	t.Helper()
	o := startOptions{env: map[string]string{}, logger: func(app.Config) *slog.Logger { return storetest.Logger(t) }}
	for _, opt := range opts {
		opt(&o)
	}
	bottest.Redis(t)
	vars := map[string]string{"REDIS_URL": os.Getenv("REDIS_URL"), "BOBNET_REDIS_PREFIX": bottest.Prefix(), "BOBNET_MODEL": "test-model"}
	model := plannertest.NewServer(t)
	plan := plannertest.NewspaperPlan(t)
	model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: plan} })
	vars["OPENAI_BASE_URL"] = model.URL()
	if _, own := o.env["DATABASE_URL"]; !own {
		vars["DATABASE_URL"] = storetest.NewDatabase(t)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() }) // Serve closes it; this is for a failed start
	vars["BOBNET_PUBLIC_URL"] = "http://" + ln.Addr().String()
	var adminLn net.Listener
	if o.admin {
		if adminLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = adminLn.Close() })
		vars["BOBNET_ADMIN_LISTEN"] = adminLn.Addr().String()
	}
	maps.Copy(vars, o.env)
	fs := flag.NewFlagSet("systemtest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg, err := app.LoadConfig(fs, nil, func(k string) string { return vars[k] })
	var a *app.App
	if err == nil {
		a, err = app.New(context.Background(), cfg, o.logger(cfg))
	}
	if o.startErr != nil {
		if a != nil {
			a.Close()
		}
		*o.startErr = err
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx, ln, adminLn) }()
	var once sync.Once
	var serveErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-served:
				a.Close()
			case <-time.After(time.Minute):
				t.Error("Serve did not return within a minute of the signal")
			}
		})
		return serveErr
	}
	t.Cleanup(func() { _ = stop() })
	ta := &testApp{URL: "http://" + ln.Addr().String(), Model: model, DB: vars["DATABASE_URL"], App: a, token: vars["BOBNET_API_TOKEN"], stop: stop}
	if adminLn != nil {
		ta.AdminURL = "http://" + adminLn.Addr().String()
	}
	return ta
}
