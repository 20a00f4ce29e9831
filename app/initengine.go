package app

import (
	"fmt"
	"log/slog"

	"github.com/bobnet/bobnet/adapters/console"
	"github.com/bobnet/bobnet/adapters/webhook"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/metrics"
	"github.com/bobnet/bobnet/planner"
)

// planning is the engine and what it plans with.
type planning struct {
	engine   *bot.Engine
	model    *planner.Client
	profiles []planner.Profile
	series   *metrics.Metrics
	// console is the web console's chat surface, registered with the
	// engine as board.SourceConsole.
	console *console.Console
}

// initEngine loads the assignee profiles and builds the model client,
// the metrics and the engine, whose events go to the outbox (ext, built
// before it) and whose hooks' channels have the hooks' deciders; and the
// console surface.
func initEngine(cfg Config, st *stores, ext *integrations, logger *slog.Logger) (*planning, error) {
	profiles := planner.DefaultProfiles()
	if cfg.ProfilesDir != "" {
		var err error
		if profiles, err = planner.LoadProfiles(cfg.ProfilesDir); err != nil {
			return nil, fmt.Errorf("BOBNET_PROFILES_DIR: %w", err)
		}
	}
	model := planner.NewClient(planner.ClientConfig{
		BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey, Model: cfg.Model, Timeout: cfg.PlanTimeout, Stream: cfg.ModelStream,
	}, logger)
	series := metrics.New()
	series.WatchQueue(st.queue, logger)
	db, redisStore := st.db, st.pending
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
		ChannelDeciders:    webhook.Deciders(ext.hooks),
	}, bot.Deps{
		Planner: series.Planner(model),
		Boards:  db, History: db, Decisions: db, Audit: db, Deliveries: db,
		Cards: db, Assigned: db, Policies: db, Usage: db, Runs: db,
		Proposals: redisStore, Requests: redisStore, Queue: st.queue, Pending: redisStore, Reminders: redisStore,
		Observer: series, Events: bot.Events{Sink: ext.outbox, Encoder: ext.outbox},
	}, logger)
	if err != nil {
		return nil, err
	}
	// The engine and the chat surfaces need each other: a surface submits
	// to the engine, and the engine posts through the surface. The surface
	// is built with the engine; the engine learns of it by Register (a
	// bot.Registration of small interfaces), before Run starts it.
	con := console.New(engine, db, logger)
	engine.Register(board.SourceConsole, bot.Registration{Poster: con, Drafts: con, Runs: con})
	return &planning{engine: engine, model: model, profiles: profiles, series: series, console: con}, nil
}
