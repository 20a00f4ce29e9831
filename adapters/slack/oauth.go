package slack

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
)

// OAuthConfig turns on multi-workspace mode: BobNet is installed into
// workspaces through Slack's OAuth v2 flow (/slack/install), keeps each
// installation's tokens in Installations, and answers every workspace with
// its own token.
type OAuthConfig struct {
	ClientID      string
	ClientSecret  string
	Installations Installations
	// StateKey signs the install flow's state (HMAC-SHA256); every replica
	// needs the same one.
	StateKey []byte
	// Scopes are the bot scopes asked for (default BotScopes).
	Scopes []string
	// AuthorizeURL is Slack's authorize page (default Slack's own).
	AuthorizeURL string
	// Clients bounds how many workspaces' clients a replica keeps
	// (default 4096); past it the least recently used is read again.
	Clients int
}

// BotScopes are the bot scopes BobNet asks for, as in
// deploy/slack/manifest.yaml (a test holds the two together).
var BotScopes = []string{"app_mentions:read", "channels:history", "groups:history", "chat:write", "commands", "channels:read", "groups:read"}

// Install flow limits.
const (
	// stateTTL is how long an install link works.
	stateTTL = 10 * time.Minute
	// usedTTL is how long a used state or code is remembered: longer than
	// either lives (a Slack code lives 10 minutes).
	usedTTL = 15 * time.Minute
	// stateCookie carries the state's nonce in the browser that started
	// the install, so a callback link sent to someone else does not
	// install into their workspace on the sender's behalf.
	stateCookie  = "bobnet_slack_oauth"
	callbackPath = "/slack/oauth/callback"
)

const defaultAuthorizeURL = "https://slack.com/oauth/v2/authorize"

// InstallRoutes mounts the install page and the OAuth callback (plain
// pages, neither signed by Slack nor behind the API token); nothing in
// single-workspace mode.
func (a *Adapter) InstallRoutes(r chi.Router) {
	if a.teams == nil {
		return
	}
	r.Get("/slack/install", a.installPage)
	r.Get(callbackPath, a.oauthCallback)
}

func (a *Adapter) redirectURI() string { return strings.TrimRight(a.cfg.PublicURL, "/") + callbackPath }

// newState is a signed install state: a random nonce and its expiry,
// with their HMAC.
func (a *Adapter) newState() (state, nonce string) {
	payload := make([]byte, 24)
	_, _ = rand.Read(payload[:16])
	binary.BigEndian.PutUint64(payload[16:], uint64(a.now().Add(stateTTL).Unix()))
	return enc(payload) + "." + enc(a.stateMAC(payload)), enc(payload[:16])
}

func (a *Adapter) stateMAC(payload []byte) []byte {
	m := hmac.New(sha256.New, a.cfg.OAuth.StateKey)
	m.Write([]byte("slack-oauth-state\x00"))
	m.Write(payload)
	return m.Sum(nil)
}

func enc(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// Why an install callback is refused.
var (
	errBadState     = errors.New("this install link is not valid or has expired")
	errOtherBrowser = errors.New("this install was started in another browser")
	errUsedState    = errors.New("this install link was used already")
	errUsedCode     = errors.New("this authorization code was used already")
)

// checkState verifies a state's signature and expiry and returns its
// nonce.
func (a *Adapter) checkState(state string) (string, error) {
	p, m, ok := strings.Cut(state, ".")
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	mac, err2 := base64.RawURLEncoding.DecodeString(m)
	if !ok || err1 != nil || err2 != nil || len(payload) != 24 || !hmac.Equal(mac, a.stateMAC(payload)) {
		return "", errBadState
	}
	if a.now().Unix() > int64(binary.BigEndian.Uint64(payload[16:])) {
		return "", errBadState
	}
	return enc(payload[:16]), nil
}

func (a *Adapter) now() time.Time {
	if a.cfg.Now != nil {
		return a.cfg.Now()
	}
	return time.Now()
}

// installTmpl is parsed when first drawn: most servers never install.
var installTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("install").Parse(installSource))
})

const installSource = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body><main>
<h1>{{.Title}}</h1>
<p>{{.Text}}</p>
{{if .Link}}<p><a href="{{.Link}}">{{.LinkText}}</a></p>{{end}}
</main></body></html>
`

type page struct{ Title, Text, Link, LinkText string }

func writePage(w http.ResponseWriter, status int, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = installTmpl().Execute(w, p)
}

// installPage shows the "Add to Slack" link: Slack's authorize page with
// BobNet's client id, its bot scopes, the callback and a fresh state.
func (a *Adapter) installPage(w http.ResponseWriter, r *http.Request) {
	state, nonce := a.newState()
	scopes := a.cfg.OAuth.Scopes
	if len(scopes) == 0 {
		scopes = BotScopes
	}
	base := a.cfg.OAuth.AuthorizeURL
	if base == "" {
		base = defaultAuthorizeURL
	}
	q := url.Values{"client_id": {a.cfg.OAuth.ClientID}, "scope": {strings.Join(scopes, ",")}, "redirect_uri": {a.redirectURI()}, "state": {state}}
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: nonce, Path: "/slack/oauth/", MaxAge: int(stateTTL.Seconds()),
		HttpOnly: true, Secure: strings.HasPrefix(a.cfg.PublicURL, "https://"), SameSite: http.SameSiteLaxMode})
	writePage(w, http.StatusOK, page{Title: "Install BobNet in Slack",
		Text: "BobNet turns a request in a Slack channel into a plan, and writes it to a board once someone approves it. The link works for 10 minutes.",
		Link: base + "?" + q.Encode(), LinkText: "Add to Slack"})
}

// oauthCallback finishes an install: the state must be BobNet's, fresh,
// from this browser and unused, the code unused; then oauth.v2.access
// trades the code for the workspace's tokens, which are stored sealed.
func (a *Adapter) oauthCallback(w http.ResponseWriter, r *http.Request) {
	again := page{Link: "/slack/install", LinkText: "Start the installation again"}
	refuse := func(status int, title, text string) {
		again.Title, again.Text = title, text
		writePage(w, status, again)
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		// Slack's codes are snake_case words (access_denied); anything
		// else in the link is not Slack's and is not shown back.
		if len(e) > 64 || !slackErrorCode.MatchString(e) {
			e = "an error"
		}
		refuse(http.StatusBadRequest, "BobNet was not installed", "Slack answered "+e+". Nothing was installed.")
		return
	}
	nonce, err := a.checkState(q.Get("state"))
	if err == nil {
		if c, cerr := r.Cookie(stateCookie); cerr != nil || !hmac.Equal([]byte(c.Value), []byte(nonce)) {
			err = errOtherBrowser
		}
	}
	if err == nil {
		err = a.useOnce(r.Context(), "slack-oauth-state:"+nonce, errUsedState)
	}
	code := q.Get("code")
	if err == nil && code == "" {
		err = errBadState
	}
	if err == nil {
		sum := sha256.Sum256([]byte(code))
		err = a.useOnce(r.Context(), "slack-oauth-code:"+hex.EncodeToString(sum[:]), errUsedCode)
	}
	if err != nil {
		a.logger.Warn("slack install refused", "err", err)
		if errors.Is(err, errUnavailableInstall) {
			refuse(http.StatusServiceUnavailable, "Try again in a minute", "BobNet cannot reach its database right now; nothing was installed.")
			return
		}
		refuse(http.StatusBadRequest, "BobNet was not installed", capitalize(err.Error())+". Nothing was installed.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.Timeout)
	defer cancel()
	resp, err := slackapi.GetOAuthV2ResponseContext(ctx, a.teams.http, a.cfg.OAuth.ClientID, a.cfg.OAuth.ClientSecret, code, a.redirectURI(), a.teams.oauthOpts()...)
	if err != nil || resp.AccessToken == "" {
		a.logger.Warn("slack install: oauth.v2.access failed", "err", err)
		refuse(http.StatusBadGateway, "BobNet was not installed", "Slack did not accept the installation; nothing was installed.")
		return
	}
	in := installationFrom(resp, a.now())
	if err := a.teams.store.Save(r.Context(), in); err != nil {
		a.logger.Error("slack install: store the installation", "installation", in.ID, "err", err)
		refuse(http.StatusServiceUnavailable, "Try again in a minute", "BobNet could not store the installation; nothing was installed.")
		return
	}
	a.teams.forget(in.ID)
	a.logger.Info("slack: installed", "installation", in.ID, "team", in.TeamID, "enterprise", in.EnterpriseID, "by", in.InstallerUserID)
	name := in.TeamName
	if name == "" {
		name = "your workspace"
	}
	writePage(w, http.StatusOK, page{Title: "BobNet is installed",
		Text: "BobNet is installed in " + name + ". Invite @BobNet to a channel and mention it with what you want planned."})
}

var slackErrorCode = regexp.MustCompile(`^[a-z_]+$`)

// errUnavailableInstall is a used-once check Redis did not answer.
var errUnavailableInstall = errors.New("cannot check whether the link was used")

// useOnce marks key used, or returns used when it was already.
func (a *Adapter) useOnce(ctx context.Context, key string, used error) error {
	first, err := a.memory.SeenOnce(ctx, key, usedTTL)
	if err != nil {
		return errors.Join(errUnavailableInstall, err)
	}
	if !first {
		return used
	}
	return nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// installationFrom is the installation oauth.v2.access answered with.
func installationFrom(resp *slackapi.OAuthV2Response, now time.Time) board.SlackInstallation {
	in := board.SlackInstallation{
		ID: installationOf(resp.Team.ID, resp.Enterprise.ID, resp.IsEnterpriseInstall), TeamID: resp.Team.ID, TeamName: resp.Team.Name,
		EnterpriseID: resp.Enterprise.ID, IsEnterpriseInstall: resp.IsEnterpriseInstall, BotUserID: resp.BotUserID,
		AppID: resp.AppID, Scopes: resp.Scope, InstallerUserID: resp.AuthedUser.ID, BotToken: resp.AccessToken,
		RefreshToken: resp.RefreshToken, InstalledAt: now,
	}
	if resp.ExpiresIn > 0 {
		in.TokenExpiresAt = now.Add(time.Duration(resp.ExpiresIn) * time.Second)
	}
	return in
}
