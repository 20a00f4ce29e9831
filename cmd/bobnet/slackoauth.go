package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

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
// tokens, the installation store behind it (whose rows sealed under an old
// key are sealed again under the current one first), and the key signing
// install states.
func slackOAuthConfig(ctx context.Context, cfg Config, db *store.Store, logger *slog.Logger) (*slack.OAuthConfig, error) {
	box, err := secretbox.New(cfg.EncryptionKey, cfg.EncryptionKeysOld...)
	if err != nil {
		return nil, fmt.Errorf("BOBNET_ENCRYPTION_KEY: %w", err)
	}
	installs := db.SlackInstallations(box)
	n, err := installs.Reseal(ctx)
	if errors.Is(err, secretbox.ErrUnknownKey) || errors.Is(err, secretbox.ErrOpen) {
		return nil, fmt.Errorf("BOBNET_ENCRYPTION_KEY: a Slack installation was sealed with a key that is neither this one nor in BOBNET_ENCRYPTION_KEYS_OLD: %w", err)
	}
	if err != nil {
		return nil, err
	}
	if n > 0 {
		logger.Info("slack: installations sealed again under the current BOBNET_ENCRYPTION_KEY", "count", n)
	}
	return &slack.OAuthConfig{ClientID: cfg.SlackClientID, ClientSecret: cfg.SlackClientSecret, Installations: installs,
		StateKey: box.Derive("slack-oauth-state")}, nil
}
