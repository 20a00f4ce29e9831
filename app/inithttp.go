package app

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/adapters/webhook"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/sse"
	"github.com/bobnet/bobnet/web"
)

// routed is what the HTTP routes serve, built before them.
type routed struct {
	stores   *stores
	planning *planning
	ext      *integrations
	hooks    *webhook.Adapter
	slack    *slack.Adapter // nil when Slack is off
	runs     *runParts
	feed     web.Feed // the live card changes (startLiveBoards)
}

// initHTTP mounts every route on the public handler, and builds the
// admin listener's handler (nil without BOBNET_ADMIN_LISTEN).
func initHTTP(cfg Config, x routed, logger *slog.Logger) (handler, admin http.Handler) {
	db, engine, series := x.stores.db, x.planning.engine, x.planning.series
	root := chi.NewRouter()
	root.Use(logRequests(logger))
	// The endpoints signed by their senders answer servers (Slack, the
	// hooks' senders) with no page: they go without the browser's
	// security headers, which cost Slack's event acknowledgement a tenth
	// of its allocations. Everything else carries them.
	if x.slack != nil && cfg.SlackSigningSecret != "" {
		x.slack.Routes(root) // signed by Slack, not by the API token
	}
	x.hooks.Routes(root) // signed by their senders, not by the API token
	r := root.With(web.SecurityHeaders)
	ready := readyHandler(map[string]pinger{"postgres": db, "redis": x.stores.pending}, logger)
	healthRoutes(r, ready)
	// The API's guards: cross-site and rebinding first, then the token.
	apiGuards := []func(http.Handler) http.Handler{
		httpapi.Guard(httpapi.GuardConfig{PublicURL: cfg.PublicURL, Listen: cfg.Listen, Tokenless: cfg.APIToken == ""}),
		x.ext.guard.Middleware,
	}
	// On the public listener the metrics need an admin token
	// (apitoken.RequiredScope); the admin listener serves them without.
	r.With(apiGuards...).Handle("/metrics", series.Handler())
	if cfg.AdminListen != "" {
		admin = adminHandler(series.Handler(), ready, logger)
	}

	// One cap on event streams per caller and in all, whichever kind.
	streams := sse.New(sse.Limits{PerCaller: cfg.StreamsPerCaller, Total: cfg.Streams})
	pages := web.New(db, x.feed, streams, logger)
	pages.PageRoutes(r)
	web.NewEditions(db, logger).Routes(r)
	x.planning.console.PageRoutes(r)
	runners := x.runs.worker.Runners()
	httpapi.API{
		Guards:    apiGuards,
		Chat:      httpapi.NewChat(httpapi.ChatDeps{Engine: engine, Channels: x.planning.console, Successors: db, Boards: db, Requests: x.stores.pending, Streams: streams}, logger),
		Cards:     httpapi.NewCards(engine, db, logger),
		Policies:  httpapi.NewPolicies(db, engine, logger),
		Runs:      httpapi.NewRuns(db, engine, runners, cfg.RunDeadline, cfg.PublicURL),
		Schedules: httpapi.NewSchedules(db, x.runs.clock.Now),
		Boards:    httpapi.NewBoards(db, pages.Events, logger),
		Outputs:   httpapi.NewOutputs(db, engine),
		Usage:     httpapi.NewUsage(engine, logger),
		Tokens:    httpapi.NewTokens(x.ext.tokens, logger),
	}.Routes(r)
	if x.slack != nil && cfg.SlackSigningSecret != "" {
		x.slack.InstallRoutes(r) // public pages; only with OAuth installs
	}
	return root, admin
}
