package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/secretbox"
	"github.com/bobnet/bobnet/store"
)

// slackOAuth reports whether BobNet installs into many Slack workspaces
// through OAuth rather than using one bot token.
func (c *Config) slackOAuth() bool { return c.SlackClientID != "" || c.SlackClientSecret != "" }

// validateSlackOAuth checks multi-workspace mode's settings: it needs the
// client id and secret, the signing secret and an encryption key, and no
// single bot token beside them.
func (c *Config) validateSlackOAuth() []error {
	if !c.slackOAuth() {
		if len(c.EncryptionKeysOld) > 0 && c.EncryptionKey == "" {
			return []error{errors.New("BOBNET_ENCRYPTION_KEY: required when BOBNET_ENCRYPTION_KEYS_OLD is set")}
		}
		return nil
	}
	var errs []error
	need := func(env, v, why string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s: required to install BobNet into many Slack workspaces (%s)", env, why))
		}
	}
	need("SLACK_CLIENT_ID", c.SlackClientID, "the Slack app's Basic Information page")
	need("SLACK_CLIENT_SECRET", c.SlackClientSecret, "the Slack app's Basic Information page")
	need("SLACK_SIGNING_SECRET", c.SlackSigningSecret, "every request from Slack is signed with it")
	need("BOBNET_ENCRYPTION_KEY", c.EncryptionKey, "it seals each workspace's tokens; make one with openssl rand -base64 32")
	if c.SlackBotToken != "" {
		errs = append(errs, errors.New("SLACK_BOT_TOKEN: leave it unset with SLACK_CLIENT_ID: each workspace's token comes from its installation"))
	}
	return errs
}

// slackOAuthConfig is multi-workspace Slack's wiring: the box sealing the
// tokens, the installation store behind it (whose rows sealed under an
// older key are sealed again under the newest one first, and then every
// resealEvery: the caller starts that with startResealing), and the key
// signing install states. Only a row under a key the box does not hold at
// all keeps the replica from starting.
func slackOAuthConfig(ctx context.Context, cfg Config, db *store.Store, logger *slog.Logger) (*slack.OAuthConfig, *store.SlackInstallations, error) {
	box, err := secretbox.New(cfg.EncryptionKey, cfg.EncryptionKeysOld...)
	if err != nil {
		return nil, nil, fmt.Errorf("BOBNET_ENCRYPTION_KEY: %w", err)
	}
	installs := db.SlackInstallations(box)
	n, err := installs.Reseal(ctx)
	if errors.Is(err, secretbox.ErrUnknownKey) || errors.Is(err, secretbox.ErrOpen) {
		return nil, nil, fmt.Errorf("BOBNET_ENCRYPTION_KEY: a Slack installation was sealed with a key that is neither this one nor in BOBNET_ENCRYPTION_KEYS_OLD: %w", err)
	}
	if err != nil {
		return nil, nil, err
	}
	if n > 0 {
		logger.Info("slack: installations sealed again under the newest encryption key", "count", n, "key_id", installs.SealKey())
	}
	return &slack.OAuthConfig{ClientID: cfg.SlackClientID, ClientSecret: cfg.SlackClientSecret, Installations: installs,
		StateKey: box.Derive("slack-oauth-state")}, installs, nil
}

// resealEvery is how often each replica seals again, under the newest
// key, the installations sealed under another (written meanwhile by a
// replica that had not yet learned of the newest key).
const resealEvery = time.Minute

// resealer is what startResealing needs; *store.SlackInstallations is one.
type resealer interface {
	Reseal(ctx context.Context) (int, error)
}

// startResealing reseals every interval until stop is called. A failure
// (Postgres away, a row under a key this replica does not hold) is logged
// and tried again at the next tick; the replica keeps serving the rows it
// can open.
func startResealing(ctx context.Context, r resealer, every time.Duration, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			n, err := r.Reseal(ctx)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				logger.Warn("slack: sealing installations again under the newest encryption key failed; trying again", "err", err, "every", every)
			case n > 0:
				logger.Info("slack: installations sealed again under the newest encryption key", "count", n)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
