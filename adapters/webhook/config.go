package webhook

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/signing"
)

// File is BOBNET_HOOKS_FILE: per-hook settings, callback URLs of other
// channels, and the hosts callbacks may reach. Secrets stay in
// BOBNET_HOOK_SECRETS, so the file can be committed.
type File struct {
	Hooks    map[string]HookConfig    `yaml:"hooks"`
	Channels map[string]ChannelConfig `yaml:"channels"`
	Outbound Outbound                 `yaml:"outbound"`
}

// HookConfig is one hook's optional settings; every field has a default.
type HookConfig struct {
	// Target is where the preview goes as source:id: "console:triage",
	// "slack:C0123", "matrix:!room:example.org". Default console:hook-NAME.
	Target string `yaml:"target"`
	// Deciders may approve, revise or cancel this hook's proposals, beside
	// BOBNET_ADMINS.
	Deciders []string `yaml:"deciders"`
	Filter   Filter   `yaml:"filter"`
	// Template is a built-in template's name (github_issues,
	// github_workflow_run, gitlab_issue, generic) or a text/template over
	// .Hook, .Event and .Payload. Default: chosen by the event.
	Template  string     `yaml:"template"`
	Callbacks []Callback `yaml:"callbacks"`
}

// ChannelConfig is the outbound side of a channel that is not a hook's.
type ChannelConfig struct {
	Callbacks []Callback `yaml:"callbacks"`
}

// Callback is a URL that hears the channel's proposal and board events,
// signed as Standard Webhooks with Secret (default: BOBNET_CALLBACK_SECRET).
// A callback is never signed with a hook's inbound secret: whoever
// receives the callbacks could otherwise post them back to the hook as
// deliveries BobNet accepts.
type Callback struct {
	URL    string `yaml:"url"`
	Secret string `yaml:"secret"`
}

// Outbound limits where callbacks may go.
type Outbound struct {
	// AllowHosts are the host names (or IPs) callbacks may name.
	AllowHosts []string `yaml:"allow_hosts"`
	// AllowPrivate are CIDR ranges of loopback or private addresses that
	// callbacks may reach anyway (e.g. 127.0.0.1/32 for a local receiver).
	AllowPrivate []string `yaml:"allow_private"`
	// RetryBase is the wait after the first failed delivery, doubled per
	// failure (default 5s).
	RetryBase time.Duration `yaml:"retry_base"`
	// RetryMax caps the wait between attempts (default 1h).
	RetryMax time.Duration `yaml:"retry_max"`
}

// Filter says which deliveries a hook acts on; an empty list matches all.
type Filter struct {
	Events  []string `yaml:"events"`  // X-GitHub-Event, X-Gitlab-Event or the payload's "type"
	Actions []string `yaml:"actions"` // payload action (GitHub) or object_attributes.action (GitLab)
	Labels  []string `yaml:"labels"`  // at least one label with one of these names
}

// Hook is one configured hook, ready to serve.
type Hook struct {
	Name      string
	Secret    string
	Channel   board.Channel
	Deciders  []string
	Filter    Filter
	Template  *template.Template // nil: chosen per event
	Callbacks []Callback
}

// ReadFile reads a hooks file; an empty path is an empty file.
func ReadFile(path string) (File, error) {
	var f File
	if path == "" {
		return f, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Build joins the secrets with the file into hooks. A hook needs only its
// secret; a hook in the file without a secret, a secret (its own or a
// callback's) that signing.CheckSecret refuses, a bad target, template or
// callback URL is an error naming it.
func Build(secrets map[string]string, f File) (map[string]*Hook, error) {
	var errs []error
	for name := range f.Hooks {
		if _, ok := secrets[name]; !ok {
			errs = append(errs, fmt.Errorf("hook %q is in the hooks file but has no secret in BOBNET_HOOK_SECRETS", name))
		}
	}
	hooks := map[string]*Hook{}
	names := make([]string, 0, len(secrets))
	for name := range secrets {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		// A hook's name is part of its URL and of its channel's name,
		// console:hook-NAME: it follows the console channel rule.
		if !board.ValidConsoleName(name) {
			errs = append(errs, fmt.Errorf("hook name %q: use 1 to 64 lower-case letters, digits, - or _", name))
			continue
		}
		c := f.Hooks[name]
		h := &Hook{Name: name, Secret: secrets[name], Deciders: c.Deciders, Filter: c.Filter, Callbacks: c.Callbacks}
		if err := signing.CheckSecret(h.Secret); err != nil {
			errs = append(errs, fmt.Errorf("hook %q: %w", name, err))
		}
		target := c.Target
		if target == "" {
			target = "console:hook-" + name
			if !board.ValidConsoleName("hook-" + name) {
				errs = append(errs, fmt.Errorf("hook %q: without a target in the hooks file its channel is console:hook-NAME, which leaves NAME 59 characters; shorten the name or give the hook a target", name))
				continue
			}
		}
		ch, err := ParseChannel(target)
		if err != nil {
			errs = append(errs, fmt.Errorf("hook %q: target: %w", name, err))
		}
		h.Channel = ch
		if c.Template != "" {
			h.Template, err = parseTemplate(name, c.Template)
			if err != nil {
				errs = append(errs, fmt.Errorf("hook %q: template: %w", name, err))
			}
		}
		hooks[name] = h
	}
	return hooks, errors.Join(errs...)
}

// ParseChannel reads "source:id" as a channel BobNet can post to.
func ParseChannel(s string) (board.Channel, error) {
	src, id, ok := strings.Cut(s, ":")
	if !ok || id == "" {
		return board.Channel{}, fmt.Errorf("%q is not source:id (console:NAME, slack:CHANNEL or matrix:ROOM)", s)
	}
	switch board.Source(src) {
	case board.SourceConsole:
		if !board.ValidConsoleName(id) {
			return board.Channel{}, fmt.Errorf("console channel %q: use 1 to 64 lower-case letters, digits, - or _", id)
		}
	case board.SourceSlack, board.SourceMatrix:
	default:
		return board.Channel{}, fmt.Errorf("%q: source must be console, slack or matrix", s)
	}
	return board.Channel{Source: board.Source(src), ID: id}, nil
}

// Callback secrets are Standard Webhooks secrets: "whsec_" and the base64
// of MinCallbackKey to MaxCallbackKey random bytes, as the specification
// asks, so every receiver's library reads them the same way.
const (
	MinCallbackKey = 24
	MaxCallbackKey = 64
)

// ErrCallbackSecret means a callback secret is not a whsec_ secret of the
// right length.
var ErrCallbackSecret = errors.New("a callback secret is whsec_ followed by the base64 of 24 to 64 random bytes (e.g. whsec_$(openssl rand -base64 32))")

// CheckCallbackSecret refuses a secret the official Standard Webhooks
// libraries would not read as BobNet signs with it: one without "whsec_"
// (they would base64-decode it anyway and fail every signature), not
// base64, or too short to be a key.
func CheckCallbackSecret(secret string) error {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return fmt.Errorf("%w: it does not start with whsec_", ErrCallbackSecret)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return fmt.Errorf("%w: the part after whsec_ is not base64", ErrCallbackSecret)
	}
	if len(key) < MinCallbackKey || len(key) > MaxCallbackKey {
		return fmt.Errorf("%w: it holds %d bytes", ErrCallbackSecret, len(key))
	}
	return nil
}

// CheckCallbackURL refuses a callback URL that is not http(s) or whose
// host is not on the allow-list.
func CheckCallbackURL(raw string, allowHosts []string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
		return fmt.Errorf("callback %q is not an http(s) URL", raw)
	}
	if !slices.Contains(allowHosts, strings.ToLower(u.Hostname())) {
		return fmt.Errorf("callback %q: host %s is not in outbound.allow_hosts", raw, u.Hostname())
	}
	return nil
}
