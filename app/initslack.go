package app

import (
	"context"
	"log/slog"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/store"
)

// initSlack builds the Slack adapter when a bot token or OAuth installs
// are configured, and registers it with the engine; it returns nil when
// Slack is off. With OAuth installs it starts re-sealing their tokens
// (slackoauth.go); stop ends that, and is a no-op without them.
func initSlack(ctx context.Context, cfg Config, st *stores, engine *bot.Engine, logger *slog.Logger) (_ *slack.Adapter, stop func(), err error) {
	stop = func() {}
	if cfg.SlackBotToken == "" && !cfg.slackOAuth() {
		return nil, stop, nil
	}
	scfg := slack.Config{
		BotToken: cfg.SlackBotToken, SigningSecret: cfg.SlackSigningSecret, AppToken: cfg.SlackAppToken,
		APIURL: cfg.SlackAPIURL, PublicURL: cfg.PublicURL,
	}
	if cfg.slackOAuth() {
		var installs *store.SlackInstallations
		if scfg.OAuth, installs, err = slackOAuthConfig(ctx, cfg, st.db, logger); err != nil {
			return nil, stop, err
		}
		stop = startResealing(ctx, installs, resealEvery, logger)
	}
	ad, err := slack.New(ctx, scfg, engine, st.pending, logger)
	if err != nil {
		stop()
		return nil, func() {}, err
	}
	// The adapter submits to the engine, and the engine posts through it:
	// see initEngine on Register.
	engine.Register(board.SourceSlack, bot.Registration{Poster: ad, Notifier: ad, Reminders: ad, Groups: ad, Drafts: ad, Runs: ad})
	return ad, stop, nil
}
