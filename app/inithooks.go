package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"

	"github.com/bobnet/bobnet/adapters/webhook"
	"github.com/bobnet/bobnet/adapters/webhook/outbox"
	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/store"
)

// integrations are the parts that let other tools in and out: the signed
// hooks, the outbox of outbound events, and the token guard of the API.
type integrations struct {
	// hooks are the configured hooks; their adapter (webhook.New) needs
	// the engine, which needs the outbox, so it is built after both.
	hooks  map[string]*webhook.Hook
	outbox *outbox.Outbox
	guard  *apitoken.Guard
	tokens *apitoken.Tokens
	// cardKeys make the tokens of cards dispatched to each hook.
	cardKeys map[string][]byte
}

// initHooks reads BOBNET_HOOK_SECRETS and BOBNET_HOOKS_FILE, builds
// the hooks, the outbox (the engine's event sink: built before the
// engine) and the token guard.
func initHooks(cfg Config, db *store.Store, logger *slog.Logger) (*integrations, error) {
	f, err := webhook.ReadFile(cfg.HooksFile)
	if err != nil {
		return nil, fmt.Errorf("BOBNET_HOOKS_FILE: %w", err)
	}
	hooks, err := webhook.Build(cfg.HookSecrets, f)
	if err != nil {
		return nil, fmt.Errorf("BOBNET_HOOKS_FILE / BOBNET_HOOK_SECRETS: %w", err)
	}
	ocfg, err := outboxConfig(f, hooks, cfg.CallbackSecret)
	if err != nil {
		return nil, err
	}
	tokens := apitoken.NewTokens(db)
	return &integrations{
		hooks:    hooks,
		outbox:   outbox.New(ocfg, db, logger),
		guard:    apitoken.NewGuard(tokens, cfg.APIToken, logger),
		tokens:   tokens,
		cardKeys: ocfg.CardTokenKeys,
	}, nil
}

// cardTokenKeys derives each hook's key for the tokens of the cards
// dispatched to it from the hook's secret, which stays out of the
// database; the key says nothing of the secret.
func cardTokenKeys(hooks map[string]*webhook.Hook) map[string][]byte {
	keys := make(map[string][]byte, len(hooks))
	for name, h := range hooks {
		m := hmac.New(sha256.New, []byte(h.Secret))
		m.Write([]byte("bobnet run card token key"))
		keys[name] = m.Sum(nil)
	}
	return keys
}

// outboxConfig gathers every hook's and channel's callbacks, checked
// against the allow-list, each signed with its own secret or else with
// BOBNET_CALLBACK_SECRET: a whsec_ secret that no hook uses inbound, so a
// callback can never be posted back to a hook as a delivery BobNet
// accepts.
func outboxConfig(f webhook.File, hooks map[string]*webhook.Hook, callbackSecret string) (outbox.Config, error) {
	c := outbox.Config{Routes: map[string][]outbox.Endpoint{}, RetryBase: f.Outbound.RetryBase, RetryMax: f.Outbound.RetryMax}
	for _, h := range f.Outbound.AllowHosts {
		c.AllowHosts = append(c.AllowHosts, strings.ToLower(h))
	}
	var errs []error
	inbound := map[string]bool{}
	for _, h := range hooks {
		inbound[h.Secret] = true
	}
	if callbackSecret != "" && inbound[callbackSecret] {
		errs = append(errs, errors.New("BOBNET_CALLBACK_SECRET: it is also a hook's secret in BOBNET_HOOK_SECRETS; callbacks need a secret of their own, or their receivers could post them back as deliveries"))
	}
	missing := false
	for _, s := range f.Outbound.AllowPrivate {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				errs = append(errs, fmt.Errorf("BOBNET_HOOKS_FILE: outbound.allow_private: %q is not an address or CIDR range", s))
				continue
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		c.AllowPrivate = append(c.AllowPrivate, p)
	}
	add := func(channel string, cbs []webhook.Callback) (added []outbox.Endpoint) {
		for _, cb := range cbs {
			if err := webhook.CheckCallbackURL(cb.URL, c.AllowHosts); err != nil {
				errs = append(errs, fmt.Errorf("BOBNET_HOOKS_FILE: %s: %w", channel, err))
				continue
			}
			secret := cb.Secret
			switch {
			case secret == "" && callbackSecret == "":
				missing = true
				continue
			case secret == "":
				secret = callbackSecret
			default:
				if err := webhook.CheckCallbackSecret(secret); err != nil {
					errs = append(errs, fmt.Errorf("BOBNET_HOOKS_FILE: %s: callback %s: %w", channel, cb.URL, err))
					continue
				}
				if inbound[secret] {
					errs = append(errs, fmt.Errorf("BOBNET_HOOKS_FILE: %s: callback %s is signed with a hook's inbound secret; give it one of its own", channel, cb.URL))
					continue
				}
			}
			c.Routes[channel] = append(c.Routes[channel], outbox.Endpoint{URL: cb.URL, Secret: secret})
			added = append(added, outbox.Endpoint{URL: cb.URL, Secret: secret})
		}
		return added
	}
	// A hook's callbacks also hear the cards dispatched to it (runner
	// hook:<name>), whatever channel their board is in.
	c.Hooks, c.CardTokenKeys = map[string][]outbox.Endpoint{}, cardTokenKeys(hooks)
	for _, h := range hooks {
		c.Hooks[h.Name] = add(h.Channel.Key(), h.Callbacks)
	}
	for name, ch := range f.Channels {
		if _, err := webhook.ParseChannel(name); err != nil {
			errs = append(errs, fmt.Errorf("BOBNET_HOOKS_FILE: channels: %w", err))
			continue
		}
		add(name, ch.Callbacks)
	}
	if missing {
		errs = append(errs, errors.New("BOBNET_CALLBACK_SECRET: required, BOBNET_HOOKS_FILE has callbacks; set a whsec_ secret of 24 to 64 random bytes (e.g. whsec_$(openssl rand -base64 32))"))
	}
	return c, errors.Join(errs...)
}
