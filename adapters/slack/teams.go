package slack

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// Installations is what the adapter needs from the store of Slack
// installations; *store.SlackInstallations is one.
type Installations interface {
	Installation(ctx context.Context, id string) (board.SlackInstallation, error)
	Save(ctx context.Context, in board.SlackInstallation) error
	Delete(ctx context.Context, id string, asOf time.Time) (bool, error)
	Refresh(ctx context.Context, id string, due func(board.SlackInstallation) bool,
		refresh func(context.Context, board.SlackInstallation) (board.SlackInstallation, error)) (board.SlackInstallation, error)
}

// Tuning of the per-workspace clients.
const (
	// defaultClients is how many workspaces' clients a replica keeps.
	defaultClients = 4096
	// clientTTL is how long a cached installation is trusted before it is
	// read again: an uninstall handled by another replica reaches this
	// one within it.
	clientTTL = time.Minute
	// missingTTL is how long "not installed" is remembered: short, so a
	// workspace that just installed through another replica is served
	// soon.
	missingTTL = 10 * time.Second
	// refreshAhead renews a rotating token when less than this is left.
	refreshAhead = 10 * time.Minute
	// unknownLogged bounds the set of uninstalled teams already logged.
	unknownLogged = 10000
)

// errNoWorkspace is a channel key in multi-workspace mode that names no
// installation ("C0123" rather than "T123/C0123").
var errNoWorkspace = errors.New("slack channel names no workspace")

// teams holds one Web API client per installation, bounded (least
// recently used out) and read again after clientTTL.
type teams struct {
	store   Installations
	oauth   OAuthConfig
	apiURL  string
	http    *http.Client
	opts    []slackapi.Option
	now     func() time.Time
	logger  *slog.Logger
	size    int
	mu      sync.Mutex
	lru     *list.List // of *teamEntry, most recent first
	byID    map[string]*list.Element
	unknown map[string]struct{}
}

type teamEntry struct {
	id      string
	missing bool
	inst    board.SlackInstallation
	api     *slackapi.Client
	loaded  time.Time
}

func newTeams(oc OAuthConfig, apiURL string, hc *http.Client, opts []slackapi.Option, now func() time.Time, logger *slog.Logger) *teams {
	size := oc.Clients
	if size <= 0 {
		size = defaultClients
	}
	return &teams{store: oc.Installations, oauth: oc, apiURL: apiURL, http: hc, opts: opts, now: now, logger: logger,
		size: size, lru: list.New(), byID: map[string]*list.Element{}, unknown: map[string]struct{}{}}
}

// entry returns the cached installation id, reading it from the store when
// it is not cached or is stale.
func (t *teams) entry(ctx context.Context, id string) (*teamEntry, error) {
	now := t.now()
	t.mu.Lock()
	if el, ok := t.byID[id]; ok {
		e := el.Value.(*teamEntry)
		ttl := clientTTL
		if e.missing {
			ttl = missingTTL
		}
		if now.Sub(e.loaded) < ttl {
			t.lru.MoveToFront(el)
			t.mu.Unlock()
			return e, nil
		}
	}
	t.mu.Unlock()
	in, err := t.store.Installation(ctx, id)
	switch {
	case errors.Is(err, board.ErrNotInstalled):
		e := &teamEntry{id: id, missing: true, loaded: now}
		t.put(e)
		return e, nil
	case err != nil:
		return nil, err
	}
	return t.put(t.newEntry(in, now)), nil
}

func (t *teams) newEntry(in board.SlackInstallation, now time.Time) *teamEntry {
	return &teamEntry{id: in.ID, inst: in, api: slackapi.New(in.BotToken, t.opts...), loaded: now}
}

// put caches e, dropping the least recently used entry past the bound.
func (t *teams) put(e *teamEntry) *teamEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.byID[e.id]; ok {
		el.Value = e
		t.lru.MoveToFront(el)
		return e
	}
	t.byID[e.id] = t.lru.PushFront(e)
	for t.lru.Len() > t.size {
		last := t.lru.Back()
		t.lru.Remove(last)
		delete(t.byID, last.Value.(*teamEntry).id)
	}
	return e
}

// forget drops id's cached client (installed again, uninstalled).
func (t *teams) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.byID[id]; ok {
		t.lru.Remove(el)
		delete(t.byID, id)
	}
	delete(t.unknown, id)
}

// firstUnknown reports whether id is a team not yet logged as unknown, so
// a flood of events for a workspace that uninstalled logs one line.
func (t *teams) firstUnknown(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.unknown[id]; ok {
		return false
	}
	if len(t.unknown) >= unknownLogged {
		clear(t.unknown)
	}
	t.unknown[id] = struct{}{}
	return true
}

// client is installation id's Web API client, its token renewed first when
// it rotates and expires soon.
func (t *teams) client(ctx context.Context, id string) (*slackapi.Client, error) {
	e, err := t.entry(ctx, id)
	if err != nil {
		return nil, err
	}
	if e.missing {
		return nil, fmt.Errorf("%w: %s", board.ErrNotInstalled, id)
	}
	if !t.due(e.inst) {
		return e.api, nil
	}
	return t.refresh(ctx, id)
}

// due says whether in's token rotates and has less than refreshAhead left.
func (t *teams) due(in board.SlackInstallation) bool {
	return in.RefreshToken != "" && !in.TokenExpiresAt.IsZero() && in.TokenExpiresAt.Sub(t.now()) < refreshAhead
}

// refresh renews id's tokens (oauth.v2.access, grant_type=refresh_token)
// under the installation's row lock, so of all replicas using it at
// once one calls Slack and the others read what it stored.
func (t *teams) refresh(ctx context.Context, id string) (*slackapi.Client, error) {
	in, err := t.store.Refresh(ctx, id, t.due, func(ctx context.Context, in board.SlackInstallation) (board.SlackInstallation, error) {
		resp, err := slackapi.RefreshOAuthV2TokenContext(ctx, t.http, t.oauth.ClientID, t.oauth.ClientSecret, in.RefreshToken, t.oauthOpts()...)
		if err != nil {
			return in, fmt.Errorf("refresh the slack token of %s: %w", id, err)
		}
		if resp.AccessToken == "" {
			return in, fmt.Errorf("refresh the slack token of %s: no access token in the answer", id)
		}
		in.BotToken = resp.AccessToken
		if resp.RefreshToken != "" {
			in.RefreshToken = resp.RefreshToken
		}
		in.TokenExpiresAt = time.Time{}
		if resp.ExpiresIn > 0 {
			in.TokenExpiresAt = t.now().Add(time.Duration(resp.ExpiresIn) * time.Second)
		}
		t.logger.Info("slack: token renewed", "installation", id, "expires", in.TokenExpiresAt)
		return in, nil
	})
	if err != nil {
		return nil, err
	}
	return t.put(t.newEntry(in, t.now())).api, nil
}

func (t *teams) oauthOpts() []slackapi.OAuthOption {
	if t.apiURL == "" {
		return nil
	}
	return []slackapi.OAuthOption{slackapi.OAuthOptionAPIURL(t.apiURL)}
}

// installationOf names the installation a payload from Slack belongs to:
// the organization for an org-wide install, else the workspace.
func installationOf(team, enterprise string, enterpriseInstall bool) string {
	if enterpriseInstall && enterprise != "" {
		return enterprise
	}
	return team
}

// scopedID is a channel's or a user's id as BobNet names it. In
// multi-workspace mode it is prefixed by its installation ("T123/C0123"),
// so two workspaces' C0123 are two channels with their own boards, limits
// and proposals (and two U456 two App Home viewers); a single workspace
// keeps the bare id ("C0123", key "slack:C0123").
func (a *Adapter) scopedID(installation, channel string) string {
	if a.teams == nil {
		return channel
	}
	return installation + "/" + channel
}

// web is the Web API client to reach a channel (as BobNet names it) with,
// and the channel's id in its workspace.
func (a *Adapter) web(ctx context.Context, channel string) (*slackapi.Client, string, error) {
	if a.teams == nil {
		return a.api, channel, nil
	}
	id, ch, ok := strings.Cut(channel, "/")
	if !ok || id == "" {
		return nil, "", fmt.Errorf("%w: %q", errNoWorkspace, channel)
	}
	api, err := a.teams.client(ctx, id)
	if err != nil {
		return nil, "", err
	}
	return api, ch, nil
}

// authorization is one entry of an event's "authorizations": the
// installation Slack delivers the event for.
type authorization struct {
	TeamID              string `json:"team_id"`
	EnterpriseID        string `json:"enterprise_id"`
	IsEnterpriseInstall bool   `json:"is_enterprise_install"`
}

// eventInstallation names the installation an event is for: from its
// authorizations when Slack sent them, else its team, or its organization
// when BobNet is installed org-wide there.
func (a *Adapter) eventInstallation(ctx context.Context, env eventEnvelope) (*teamEntry, string, error) {
	if len(env.Authorizations) > 0 {
		au := env.Authorizations[0]
		id := installationOf(au.TeamID, au.EnterpriseID, au.IsEnterpriseInstall)
		e, err := a.teams.entry(ctx, id)
		return e, id, err
	}
	e, err := a.teams.entry(ctx, env.TeamID)
	if err != nil || !e.missing || env.EnterpriseID == "" {
		return e, env.TeamID, err
	}
	e, err = a.teams.entry(ctx, env.EnterpriseID)
	if err == nil && e.missing {
		return e, env.TeamID, nil
	}
	return e, env.EnterpriseID, err
}

// scopeEvent prepares an event in multi-workspace mode: it handles the
// app's removal (app_uninstalled, tokens_revoked), drops events of
// workspaces BobNet is not installed in (logged once per workspace), and
// names the event's channel by its installation. ok is false when nothing
// more is to be done.
func (a *Adapter) scopeEvent(ctx context.Context, env *eventEnvelope) (ok bool, err error) {
	if a.teams == nil || env.Type != "event_callback" {
		return true, nil
	}
	e, id, err := a.eventInstallation(ctx, *env)
	if err != nil {
		return false, fmt.Errorf("%w: read installation: %w", bot.ErrUnavailable, err)
	}
	switch env.Event.Type {
	case "app_uninstalled":
		return false, a.uninstall(ctx, id, *env)
	case "tokens_revoked":
		if len(env.Event.Tokens.Bot) > 0 {
			return false, a.uninstall(ctx, id, *env)
		}
		return false, nil // user tokens only: BobNet keeps none
	}
	if e.missing {
		if a.teams.firstUnknown(id) {
			a.logger.Warn("slack: event from a workspace BobNet is not installed in; ignoring its events", "installation", id, "event", env.Event.Type)
		}
		return false, nil
	}
	env.Event.Channel = a.scopedID(id, env.Event.Channel)
	env.installation = id
	return true, nil
}

// uninstall forgets an installation whose app was removed or whose bot
// token was revoked, if it was made before the event happened. Slack
// delivers an event again (for an hour and more) until it is
// acknowledged, keeping its event_time: an uninstall delivered again
// after the workspace installed BobNet anew is of the old installation
// and leaves the new one. An event without event_time counts as
// happening now.
func (a *Adapter) uninstall(ctx context.Context, id string, env eventEnvelope) error {
	asOf := a.teams.now()
	if env.EventTime > 0 {
		asOf = time.Unix(env.EventTime, 0)
	}
	gone, err := a.teams.store.Delete(ctx, id, asOf)
	if err != nil {
		return fmt.Errorf("%w: %w", bot.ErrUnavailable, err)
	}
	if !gone {
		a.logger.Info("slack: uninstall event older than the installation; kept it", "installation", id,
			"event", env.Event.Type, "event_id", env.EventID, "event_time", asOf)
		return nil
	}
	a.teams.forget(id)
	a.logger.Info("slack: uninstalled", "installation", id, "event", env.Event.Type)
	return nil
}

// callbackChannel is the channel of a click or modal as BobNet names it.
func (a *Adapter) callbackChannel(cb slackapi.InteractionCallback) string {
	return a.scopedID(installationOf(cb.Team.ID, cb.Enterprise.ID, cb.IsEnterpriseInstall), cb.Channel.ID)
}

// commandChannel is a slash command's channel as BobNet names it, and
// false when BobNet is not installed in the command's workspace.
func (a *Adapter) commandChannel(ctx context.Context, team, enterprise, enterpriseInstall, channel string) (string, bool) {
	if a.teams == nil {
		return channel, true
	}
	id := installationOf(team, enterprise, enterpriseInstall == "true")
	e, err := a.teams.entry(ctx, id)
	if err != nil || e.missing {
		return "", false
	}
	return a.scopedID(id, channel), true
}

// notInstalled answers a slash command from a workspace BobNet has no
// installation for (it was removed, or never finished).
var notInstalled = commandReply{ResponseType: "ephemeral", Text: "BobNet is not installed in this workspace; ask an admin to install it again."}

// useOAuth sets up multi-workspace mode.
func (a *Adapter) useOAuth(hc *http.Client, opts []slackapi.Option) error {
	oc := *a.cfg.OAuth
	var missing []string
	for name, v := range map[string]string{"SLACK_CLIENT_ID": oc.ClientID, "SLACK_CLIENT_SECRET": oc.ClientSecret, "SLACK_SIGNING_SECRET": a.cfg.SigningSecret} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	switch {
	case len(missing) > 0:
		slices.Sort(missing)
		return fmt.Errorf("slack: installing into many workspaces needs %s", strings.Join(missing, ", "))
	case oc.Installations == nil || len(oc.StateKey) < 32:
		return errors.New("slack: installing into many workspaces needs an installation store and a 32-byte state key")
	}
	apiURL := ""
	if a.cfg.APIURL != "" {
		apiURL = strings.TrimRight(a.cfg.APIURL, "/") + "/"
	}
	now := a.cfg.Now
	if now == nil {
		now = time.Now
	}
	a.teams = newTeams(oc, apiURL, hc, opts, now, a.logger)
	return nil
}
