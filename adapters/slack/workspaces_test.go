package slack_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	openai "github.com/sashabaranov/go-openai"
	"go.yaml.in/yaml/v3"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/secretbox"
	"github.com/bobnet/bobnet/signing"
	"github.com/bobnet/bobnet/store"
)

const (
	clientID     = "1234.5678"
	clientSecret = "test-client-secret"
)

// teamCall is one Web API call to the stand-in Slack, with the token it
// carried.
type teamCall struct {
	Method string
	Token  string
	Form   url.Values
	Body   string // the raw body (views.publish sends JSON)
	TS     string
}

// teamSlack is a stand-in Slack for many workspaces: oauth.v2.access
// trades each workspace's code for its own tokens (and refresh tokens for
// new ones), and every other call must carry a token Slack issued.
type teamSlack struct {
	srv *httptest.Server
	mu  sync.Mutex
	// codes are the codes Slack's authorize page hands out, by team;
	// each works once, as Slack's do.
	codes     map[string]string
	used      map[string]bool
	tokens    map[string]string   // live access token -> team
	latest    map[string]string   // team -> newest access token
	refreshes map[string]string   // live refresh token -> team
	rotate    bool                // issue expiring tokens with refresh tokens
	groups    map[string][]string // "team/S…" -> the user group's members
	names     map[string]string   // "team/U…" -> the display name the user set
	socketURL string              // apps.connections.open's answer to xapp-test
	// refuse, when set, names the error a call is refused with ("" lets
	// it through).
	refuse func(team string, c teamCall) string
	callLog[teamCall]
	ts int
}

func newTeamSlack(t *testing.T) *teamSlack {
	f := &teamSlack{codes: map[string]string{}, used: map[string]bool{}, tokens: map[string]string{}, latest: map[string]string{}, refreshes: map[string]string{}, ts: 100}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// secretToken is a token with random bits, so a dump that holds it would
// show it.
func secretToken(prefix, team string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + team + "-" + hex.EncodeToString(b)
}

func (f *teamSlack) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	w.Header().Set("Content-Type", "application/json")
	reply := func(v map[string]any) { _ = json.NewEncoder(w).Encode(v) }
	f.mu.Lock()
	defer f.mu.Unlock()
	// slack-go sends the token as a bearer header, or in the form for
	// some methods; Slack takes either.
	c := teamCall{Method: method, Token: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), Form: form, Body: string(body)}
	if c.Token == "" {
		c.Token = form.Get("token")
	}
	if method == "oauth.v2.access" {
		f.record(c)
		if form.Get("client_id") != clientID || form.Get("client_secret") != clientSecret {
			reply(map[string]any{"ok": false, "error": "invalid_client_id"})
			return
		}
		var team string
		if form.Get("grant_type") == "refresh_token" {
			team = f.refreshes[form.Get("refresh_token")]
			delete(f.refreshes, form.Get("refresh_token"))
		} else if code := form.Get("code"); !f.used[code] {
			team = f.codes[code]
			f.used[code] = true
		}
		if team == "" {
			reply(map[string]any{"ok": false, "error": "invalid_code"})
			return
		}
		resp := map[string]any{"ok": true, "access_token": secretToken("xoxb-", team), "token_type": "bot", "scope": strings.Join(slack.BotScopes, ","),
			"bot_user_id": "U_BOT_" + team, "app_id": "A_BOBNET", "team": map[string]any{"id": team, "name": "Team " + team},
			"enterprise": nil, "is_enterprise_install": false, "authed_user": map[string]any{"id": "U_INSTALLER"}}
		if f.rotate {
			refresh := secretToken("xoxe-1-", team)
			f.refreshes[refresh] = team
			resp["access_token"] = secretToken("xoxe.xoxb-", team)
			resp["refresh_token"], resp["expires_in"] = refresh, 43200
		}
		if strings.HasPrefix(team, "E") { // an org-wide install of an Enterprise Grid org
			resp["team"], resp["enterprise"], resp["is_enterprise_install"] = nil, map[string]any{"id": team, "name": "Org " + team}, true
		}
		f.tokens[resp["access_token"].(string)] = team
		f.latest[team] = resp["access_token"].(string)
		reply(resp)
		return
	}
	if method == "apps.connections.open" && c.Token == "xapp-test" && f.socketURL != "" {
		f.record(c)
		reply(map[string]any{"ok": true, "url": f.socketURL})
		return
	}
	if f.tokens[c.Token] == "" {
		reply(map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	f.ts++
	c.TS = fmt.Sprintf("1700000000.%06d", f.ts)
	f.record(c)
	if f.refuse != nil {
		if e := f.refuse(f.tokens[c.Token], c); e != "" {
			reply(map[string]any{"ok": false, "error": e})
			return
		}
	}
	switch method {
	case "chat.postMessage", "chat.update", "chat.startStream":
		reply(map[string]any{"ok": true, "channel": form.Get("channel"), "ts": c.TS})
	case "chat.appendStream", "chat.stopStream", "chat.delete":
		reply(map[string]any{"ok": true, "channel": form.Get("channel"), "ts": form.Get("ts")})
	case "assistant.threads.setStatus":
		reply(map[string]any{"ok": true})
	case "chat.postEphemeral":
		reply(map[string]any{"ok": true, "message_ts": c.TS})
	case "conversations.replies":
		reply(map[string]any{"ok": true, "messages": []any{}, "has_more": false})
	case "views.publish":
		reply(map[string]any{"ok": true, "view": map[string]any{"id": "V_HOME"}})
	case "users.conversations":
		// Every person is in C0123 of their own workspace.
		reply(map[string]any{"ok": true, "channels": []any{map[string]any{"id": "C0123"}}, "response_metadata": map[string]any{"next_cursor": ""}})
	case "users.info":
		// Names anyone may set: display and real name, by "team/user".
		name := f.names[f.tokens[c.Token]+"/"+form.Get("user")]
		reply(map[string]any{"ok": true, "user": map[string]any{"id": form.Get("user"), "name": "alice", "real_name": name,
			"profile": map[string]any{"display_name": name, "real_name": name}}})
	case "usergroups.users.list":
		members, ok := f.groups[f.tokens[c.Token]+"/"+form.Get("usergroup")]
		if !ok {
			reply(map[string]any{"ok": false, "error": "no_such_subteam"})
			return
		}
		reply(map[string]any{"ok": true, "users": members})
	default:
		reply(map[string]any{"ok": false, "error": "unknown_method"})
	}
}

// token is the newest token Slack issued team.
func (f *teamSlack) token(team string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latest[team]
}

// logBuffer collects log lines for tests that count them.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// teamsWorld is BobNet installed through OAuth, with a stand-in Slack.
type teamsWorld struct {
	env      *bottest.Env
	slack    *teamSlack
	app      *httptest.Server
	ad       *slack.Adapter
	installs *store.SlackInstallations
	logs     *logBuffer
}

func newKey(t testing.TB) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func newTeamsWorld(t *testing.T) *teamsWorld {
	t.Helper()
	env := bottest.New(t)
	plan := plannertest.NewspaperPlan(t)
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: plan} })
	box, err := secretbox.New(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	w := &teamsWorld{env: env, slack: newTeamSlack(t), installs: env.Store.SlackInstallations(box), logs: &logBuffer{}}
	var handler http.Handler = http.NotFoundHandler()
	var mu sync.Mutex
	w.app = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := handler
		mu.Unlock()
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(w.app.Close)
	w.ad = w.adapter(t, box)
	env.Engine.Register(board.SourceSlack, bot.Registration{Poster: w.ad, Notifier: w.ad, Reminders: w.ad, Groups: w.ad})
	r := chi.NewRouter()
	w.ad.Routes(r)
	w.ad.InstallRoutes(r)
	mu.Lock()
	handler = r
	mu.Unlock()
	return w
}

// adapter is one replica's Slack adapter in multi-workspace mode, its
// configuration changed by opts.
func (w *teamsWorld) adapter(t *testing.T, box *secretbox.Box, opts ...func(*slack.Config)) *slack.Adapter {
	t.Helper()
	cfg := slack.Config{SigningSecret: secret, APIURL: w.slack.srv.URL + "/api/", PublicURL: w.app.URL,
		OAuth: &slack.OAuthConfig{ClientID: clientID, ClientSecret: clientSecret, Installations: w.installs, StateKey: box.Derive("slack-oauth-state"),
			AuthorizeURL: "https://slack.example/oauth/v2/authorize"}}
	for _, o := range opts {
		o(&cfg)
	}
	ad, err := slack.New(context.Background(), cfg, w.env.Engine, redisstore.NewInFlight(w.env.Redis, w.env.Prefix), slog.New(slog.NewTextHandler(w.logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

var href = regexp.MustCompile(`href="([^"]+)"`)

// browser is a person's browser, keeping cookies.
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// startInstall opens the install page and follows "Add to Slack" as far
// as Slack's authorize page, returning its query (state, redirect_uri …).
func (w *teamsWorld) startInstall(t *testing.T, c *http.Client) url.Values {
	t.Helper()
	status, page := get(t, c, w.app.URL+"/slack/install")
	m := href.FindStringSubmatch(page)
	if status != http.StatusOK || m == nil || !strings.Contains(page, "Add to Slack") {
		t.Fatalf("install page: %d %s", status, page)
	}
	u, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil || u.Host != "slack.example" || u.Path != "/oauth/v2/authorize" {
		t.Fatalf("authorize link %q: %v", m[1], err)
	}
	q := u.Query()
	if q.Get("client_id") != clientID || q.Get("scope") != strings.Join(slack.BotScopes, ",") ||
		q.Get("redirect_uri") != w.app.URL+"/slack/oauth/callback" || q.Get("state") == "" {
		t.Fatalf("authorize query = %v", q)
	}
	return q
}

// callback is Slack sending the browser back with code and state.
func (w *teamsWorld) callback(t *testing.T, c *http.Client, redirect, code, state string) (int, string) {
	t.Helper()
	return get(t, c, redirect+"?"+url.Values{"code": {code}, "state": {state}}.Encode())
}

// install runs the whole flow for team and returns the token Slack gave it.
func (w *teamsWorld) install(t *testing.T, team string) string {
	t.Helper()
	c := browser(t)
	q := w.startInstall(t, c)
	code := "code-" + team + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	w.slack.mu.Lock()
	w.slack.codes[code] = team
	w.slack.mu.Unlock()
	status, page := w.callback(t, c, q.Get("redirect_uri"), code, q.Get("state"))
	if status != http.StatusOK || !strings.Contains(page, "BobNet is installed in Team "+team) {
		t.Fatalf("callback: %d %s", status, page)
	}
	return w.slack.token(team)
}

func (w *teamsWorld) post(t *testing.T, path, contentType, body string) int {
	t.Helper()
	status, _ := w.postRead(t, path, contentType, body)
	return status
}

// postRead sends a signed request and returns the answer's status and body.
func (w *teamsWorld) postRead(t *testing.T, path, contentType, body string) (int, string) {
	t.Helper()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequest("POST", w.app.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", signing.SlackSignature(secret, ts, []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func teamMention(team, eventID, channel, ts, text string) string {
	b, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": team, "api_app_id": "A_BOBNET", "event_id": eventID, "event_time": 1700000000,
		"authorizations": []map[string]any{{"team_id": team, "user_id": "U_BOT_" + team, "is_bot": true, "is_enterprise_install": false}},
		"event":          map[string]any{"type": "app_mention", "user": "U_ALICE", "text": "<@U_BOT_" + team + "> " + text, "ts": ts, "channel": channel, "event_ts": ts},
	})
	return string(b)
}

func teamEvent(team, eventID string, event map[string]any) string {
	b, _ := json.Marshal(map[string]any{"type": "event_callback", "team_id": team, "api_app_id": "A_BOBNET", "event_id": eventID, "event": event})
	return string(b)
}

func teamClick(team, user, actionID, value, channel, messageTS, threadTS string) string {
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "trigger_id": "T-" + actionID, "user": map[string]any{"id": user, "team_id": team},
		"team": map[string]any{"id": team}, "channel": map[string]any{"id": channel}, "is_enterprise_install": false,
		"container": map[string]any{"type": "message", "message_ts": messageTS, "channel_id": channel, "thread_ts": threadTS},
		"message":   map[string]any{"ts": messageTS, "thread_ts": threadTS},
		"actions":   []map[string]any{{"action_id": actionID, "block_id": "bobnet_decision:" + value, "type": "button", "value": value, "action_ts": "1"}},
	})
	return "payload=" + url.QueryEscape(string(payload))
}

func isTeamPreview(thread string) func(teamCall) bool {
	return func(c teamCall) bool {
		return c.Method == "chat.postMessage" && c.Form.Get("thread_ts") == thread && strings.Contains(c.Form.Get("blocks"), "bobnet_approve")
	}
}

// TestSlackTwoWorkspaces installs BobNet in two workspaces through OAuth
// and checks that each is answered with its own token, that a click in one
// cannot decide the other's proposal, that uninstalling one leaves the
// other working, and that the tokens are not in the database in the clear.
func TestSlackTwoWorkspaces(t *testing.T) {
	t.Parallel()
	w := newTeamsWorld(t)
	tokA, tokB := w.install(t, "T_A"), w.install(t, "T_B")
	if tokA == "" || tokB == "" || tokA == tokB {
		t.Fatalf("tokens %q %q", tokA, tokB)
	}

	// The same channel id in both workspaces: two channels.
	const threadA, threadB = "1690000000.000001", "1690000000.000002"
	if s := w.post(t, "/slack/events", "application/json", teamMention("T_A", "EvA1", "C0123", threadA, "plan our daily research newspaper")); s != http.StatusOK {
		t.Fatalf("event A: %d", s)
	}
	if s := w.post(t, "/slack/events", "application/json", teamMention("T_B", "EvB1", "C0123", threadB, "plan our daily research newspaper")); s != http.StatusOK {
		t.Fatalf("event B: %d", s)
	}
	prevA := w.slack.waitFor(t, "team A's preview", isTeamPreview(threadA))
	prevB := w.slack.waitFor(t, "team B's preview", isTeamPreview(threadB))
	if prevA.Token != tokA || prevB.Token != tokB {
		t.Fatalf("previews posted with the wrong workspace's token: A with %q (want %q), B with %q (want %q)", prevA.Token, tokA, prevB.Token, tokB)
	}
	if prevA.Form.Get("channel") != "C0123" || prevB.Form.Get("channel") != "C0123" {
		t.Fatalf("previews posted to %q and %q, not Slack's channel id", prevA.Form.Get("channel"), prevB.Form.Get("channel"))
	}
	pidA := proposalID.FindStringSubmatch(prevA.Form.Get("blocks"))[1]
	pidB := proposalID.FindStringSubmatch(prevB.Form.Get("blocks"))[1]
	pa, err := w.env.Engine.Proposal(context.Background(), board.ProposalID(pidA))
	if err != nil || pa.Thread.Channel.Key() != "slack:T_A/C0123" {
		t.Fatalf("proposal A is in %q: %v", pa.Thread.Channel.Key(), err)
	}

	// Team B's U_ALICE (another person than team A's) clicks Approve on
	// team A's proposal, naming team A's channel and message exactly.
	if s := w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", teamClick("T_B", "U_ALICE", "bobnet_approve", pidA, "C0123", prevA.TS, threadA)); s != http.StatusOK {
		t.Fatalf("click: %d", s)
	}
	refusal := w.slack.waitFor(t, "refusal in team B", func(c teamCall) bool { return c.Method == "chat.postEphemeral" })
	if refusal.Token != tokB || refusal.Form.Get("text") != "I can't find that proposal any more." {
		t.Fatalf("refusal = %q with %q", refusal.Form.Get("text"), refusal.Token)
	}
	if p, _ := w.env.Engine.Proposal(context.Background(), board.ProposalID(pidA)); p.State != board.ProposalPending {
		t.Fatalf("team B's click decided team A's proposal: %s", p.State)
	}
	// Team A's requester approves in team A.
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", teamClick("T_A", "U_ALICE", "bobnet_approve", pidA, "C0123", prevA.TS, threadA))
	update := w.slack.waitFor(t, "team A's preview updated", func(c teamCall) bool { return c.Method == "chat.update" })
	if update.Token != tokA || update.Form.Get("channel") != "C0123" || update.Form.Get("ts") != prevA.TS {
		t.Fatalf("update = %v with %q", update.Form, update.Token)
	}
	if p, _ := w.env.Engine.Proposal(context.Background(), board.ProposalID(pidB)); p.State != board.ProposalPending {
		t.Fatalf("team B's proposal is %s after team A's approval", p.State)
	}

	// Team B uninstalls: its installation is gone, team A still works.
	if s := w.post(t, "/slack/events", "application/json", teamEvent("T_B", "EvB2", map[string]any{"type": "app_uninstalled"})); s != http.StatusOK {
		t.Fatalf("app_uninstalled: %d", s)
	}
	if _, err := w.installs.Installation(context.Background(), "T_B"); err != board.ErrNotInstalled {
		t.Fatalf("team B's installation after app_uninstalled: %v", err)
	}
	before := len(w.slack.snapshot())
	w.post(t, "/slack/events", "application/json", teamMention("T_B", "EvB3", "C0123", "1690000000.000003", "plan a launch"))
	w.post(t, "/slack/events", "application/json", teamMention("T_A", "EvA3", "C0456", "1690000000.000004", "plan a launch"))
	prev := w.slack.waitFor(t, "team A answered after team B left", isTeamPreview("1690000000.000004"))
	if prev.Token != tokA {
		t.Fatalf("team A answered with %q", prev.Token)
	}
	w.env.WaitIdle(t)
	for _, c := range w.slack.snapshot()[before:] {
		if c.Token == tokB || c.Form.Get("thread_ts") == "1690000000.000003" {
			t.Fatalf("team B was answered after uninstalling: %+v", c)
		}
	}

	// /bobnet status: team A's C0123 has the board, team B (uninstalled)
	// is told BobNet is not installed there.
	status := func(team string) string {
		_, body := w.postRead(t, "/slack/commands", "application/x-www-form-urlencoded",
			url.Values{"command": {"/bobnet"}, "text": {"status"}, "team_id": {team}, "channel_id": {"C0123"}, "user_id": {"U_ALICE"}}.Encode())
		return body
	}
	if body := status("T_A"); !strings.Contains(body, "in_channel") || !strings.Contains(body, "Daily Research Newspaper") {
		t.Fatalf("team A's status: %s", body)
	}
	if body := status("T_B"); !strings.Contains(body, "not installed in this workspace") {
		t.Fatalf("uninstalled team B's status: %s", body)
	}

	// A dump of the table holds neither token, in text or in bytes.
	dump := tableDump(t, w)
	for _, tok := range []string{tokA, tokB} {
		if strings.Contains(dump, tok) || strings.Contains(dump, hex.EncodeToString([]byte(tok))) || strings.Contains(dump, base64.StdEncoding.EncodeToString([]byte(tok))) {
			t.Fatalf("token %s readable in the dump:\n%s", tok[:8], dump)
		}
	}
	if !strings.Contains(dump, "T_A") {
		t.Fatalf("dump has no installation of T_A: %s", dump)
	}
}

// tableDump is slack_installations as a dump shows it: every row as text,
// bytea included (hex), plus its raw bytes.
func tableDump(t *testing.T, w *teamsWorld) string {
	t.Helper()
	rows, err := w.env.Store.Pool().Query(context.Background(), `SELECT t::text, bot_token, coalesce(refresh_token, ''::bytea) FROM slack_installations t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var text string
		var bot, refresh []byte
		if err := rows.Scan(&text, &bot, &refresh); err != nil {
			t.Fatal(err)
		}
		b.WriteString(text + "\n" + string(bot) + "\n" + string(refresh) + "\n")
	}
	return b.String()
}

// TestSlackInstallRefusesReplays: a state or a code used twice is refused
// with a page saying so, as is a state from another browser or a forged
// one; events of a workspace without installation are acked, ignored and
// logged once.
func TestSlackInstallRefusesReplays(t *testing.T) {
	t.Parallel()
	w := newTeamsWorld(t)
	c := browser(t)
	q := w.startInstall(t, c)
	w.slack.mu.Lock()
	w.slack.codes["code-1"] = "T_A"
	w.slack.mu.Unlock()
	redirect, state := q.Get("redirect_uri"), q.Get("state")

	// Another browser cannot finish this browser's install.
	if status, page := w.callback(t, browser(t), redirect, "code-1", state); status != http.StatusBadRequest || !strings.Contains(page, "another browser") {
		t.Fatalf("callback without the cookie: %d %s", status, page)
	}
	if status, _ := w.callback(t, c, redirect, "code-1", state); status != http.StatusOK {
		t.Fatalf("first callback: %d", status)
	}
	// The same state again (a replayed callback URL).
	status, page := w.callback(t, c, redirect, "code-1", state)
	if status != http.StatusBadRequest || !strings.Contains(page, "This install link was used already") || !strings.Contains(page, "/slack/install") {
		t.Fatalf("replayed state: %d %s", status, page)
	}
	// The same code with a fresh state.
	q2 := w.startInstall(t, c)
	status, page = w.callback(t, c, redirect, "code-1", q2.Get("state"))
	if status != http.StatusBadRequest || !strings.Contains(page, "This authorization code was used already") {
		t.Fatalf("replayed code: %d %s", status, page)
	}
	if n := w.slack.count(func(c teamCall) bool { return c.Method == "oauth.v2.access" }); n != 1 {
		t.Fatalf("oauth.v2.access called %d times for one code", n)
	}
	// A forged state.
	q3 := w.startInstall(t, c)
	forged := strings.Replace(q3.Get("state"), q3.Get("state")[:4], "AAAA", 1)
	if status, page := w.callback(t, c, redirect, "code-2", forged); status != http.StatusBadRequest || !strings.Contains(page, "not valid or has expired") {
		t.Fatalf("forged state: %d %s", status, page)
	}

	// The installer said no on Slack's page; a made-up error is not echoed.
	if status, page := get(t, c, redirect+"?error=access_denied&state="+url.QueryEscape(state)); status != http.StatusBadRequest || !strings.Contains(page, "Slack answered access_denied") {
		t.Fatalf("declined install: %d %s", status, page)
	}
	if status, page := get(t, c, redirect+"?error="+url.QueryEscape("Call +1 555 now")); status != http.StatusBadRequest || strings.Contains(page, "555") {
		t.Fatalf("made-up error: %d %s", status, page)
	}
	for n, shown := range map[int]bool{64: true, 65: false} {
		code := strings.Repeat("x", n)
		if status, page := get(t, c, redirect+"?error="+code); status != http.StatusBadRequest || strings.Contains(page, code) != shown {
			t.Fatalf("a %d-letter error code shown: %v: %d %s", n, !shown, status, page)
		}
	}

	// Events of a workspace BobNet is not installed in.
	before := len(w.slack.snapshot())
	for i := range 3 {
		if s := w.post(t, "/slack/events", "application/json", teamMention("T_NOBODY", fmt.Sprint("EvX", i), "C1", fmt.Sprintf("1690000001.00000%d", i), "plan something")); s != http.StatusOK {
			t.Fatalf("event of an unknown workspace: %d", s)
		}
	}
	w.env.WaitIdle(t)
	if n := len(w.slack.snapshot()) - before; n != 0 {
		t.Fatalf("%d Slack calls for an unknown workspace's events", n)
	}
	if n := w.logs.count("not installed in"); n != 1 {
		t.Fatalf("unknown workspace logged %d times for 3 events", n)
	}
	if n, _ := w.env.Queue.Len(context.Background()); n != 0 {
		t.Fatalf("%d requests queued for an unknown workspace", n)
	}
}

// TestSlackTokenRefreshOnce: a rotating token about to expire is renewed
// once, whoever uses it at once on two replicas, and every user gets the
// new token.
func TestSlackTokenRefreshOnce(t *testing.T) {
	t.Parallel()
	w := newTeamsWorld(t)
	w.slack.rotate = true
	old := w.install(t, "T_A")
	in, err := w.installs.Installation(context.Background(), "T_A")
	if err != nil || in.RefreshToken == "" || in.TokenExpiresAt.IsZero() {
		t.Fatalf("installation = %+v, %v", in.ID, err)
	}
	// Five minutes left: due for renewal.
	in.TokenExpiresAt = time.Now().Add(5 * time.Minute)
	if err := w.installs.Save(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	box, _ := secretbox.New(newKey(t))
	replicas := []*slack.Adapter{w.adapter(t, box), w.adapter(t, box)}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			th := board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: "T_A/C0123"}, ID: fmt.Sprintf("1690000000.00001%d", i)}
			errs <- replicas[i%2].Reply(context.Background(), th, board.Reply{Kind: board.ReplyInfo, Text: "hello"})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	refreshes := w.slack.count(func(c teamCall) bool {
		return c.Method == "oauth.v2.access" && c.Form.Get("grant_type") == "refresh_token"
	})
	if refreshes != 1 {
		t.Fatalf("%d refreshes for one expiring token used 8 times on two replicas", refreshes)
	}
	renewed, _ := w.installs.Installation(context.Background(), "T_A")
	if renewed.BotToken == old || time.Until(renewed.TokenExpiresAt) < time.Hour {
		t.Fatalf("stored token not renewed: expires %s", renewed.TokenExpiresAt)
	}
	for _, c := range w.slack.snapshot() {
		if c.Method == "chat.postMessage" && c.Token != renewed.BotToken {
			t.Fatalf("posted with %q, not the renewed token", c.Token)
		}
	}
}

// TestSlackOrgWideInstall: an Enterprise Grid org installs BobNet once;
// events from any of its workspaces, with authorizations or only the
// enterprise id, are answered with the org's token, in channels named by
// the org.
func TestSlackOrgWideInstall(t *testing.T) {
	t.Parallel()
	w := newTeamsWorld(t)
	c := browser(t)
	q := w.startInstall(t, c)
	w.slack.mu.Lock()
	w.slack.codes["code-org"] = "E_ORG"
	w.slack.mu.Unlock()
	if status, page := w.callback(t, c, q.Get("redirect_uri"), "code-org", q.Get("state")); status != http.StatusOK || !strings.Contains(page, "BobNet is installed") {
		t.Fatalf("callback: %d %s", status, page)
	}
	in, err := w.installs.Installation(context.Background(), "E_ORG")
	if err != nil || !in.IsEnterpriseInstall || in.EnterpriseID != "E_ORG" {
		t.Fatalf("org installation = %+v, %v", in, err)
	}
	tok := w.slack.token("E_ORG")
	withAuth, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T_ONE", "enterprise_id": "E_ORG", "event_id": "EvO1",
		"authorizations": []map[string]any{{"enterprise_id": "E_ORG", "team_id": nil, "is_bot": true, "is_enterprise_install": true}},
		"event":          map[string]any{"type": "app_mention", "user": "U_ALICE", "text": "<@U_BOT> plan our newspaper", "ts": "1690000000.000100", "channel": "C_ORG"},
	})
	without, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T_TWO", "enterprise_id": "E_ORG", "event_id": "EvO2",
		"event": map[string]any{"type": "app_mention", "user": "U_BOB", "text": "<@U_BOT> plan our newspaper", "ts": "1690000000.000200", "channel": "C_ORG2"},
	})
	for _, ev := range [][]byte{withAuth, without} {
		if s := w.post(t, "/slack/events", "application/json", string(ev)); s != http.StatusOK {
			t.Fatalf("event: %d", s)
		}
	}
	for _, thread := range []string{"1690000000.000100", "1690000000.000200"} {
		if p := w.slack.waitFor(t, "preview in the org", isTeamPreview(thread)); p.Token != tok {
			t.Fatalf("org preview posted with %q", p.Token)
		}
	}
	p := w.slack.waitFor(t, "preview", isTeamPreview("1690000000.000100"))
	pid := proposalID.FindStringSubmatch(p.Form.Get("blocks"))[1]
	pr, err := w.env.Engine.Proposal(context.Background(), board.ProposalID(pid))
	if err != nil || pr.Thread.Channel.Key() != "slack:E_ORG/C_ORG" {
		t.Fatalf("org proposal in %q: %v", pr.Thread.Channel.Key(), err)
	}
}

// TestManifestMatchesOAuth holds deploy/slack/manifest.yaml to what the
// install flow asks for and handles: the bot scopes, the redirect URL, and
// the events that remove an installation.
func TestManifestMatchesOAuth(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../deploy/slack/manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		OAuth struct {
			RedirectURLs []string `yaml:"redirect_urls"`
			Scopes       struct {
				Bot []string `yaml:"bot"`
			} `yaml:"scopes"`
		} `yaml:"oauth_config"`
		Settings struct {
			Events struct {
				Bot []string `yaml:"bot_events"`
			} `yaml:"event_subscriptions"`
		} `yaml:"settings"`
	}
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.OAuth.Scopes.Bot, slack.BotScopes) {
		t.Errorf("manifest bot scopes %q, install asks for %q", m.OAuth.Scopes.Bot, slack.BotScopes)
	}
	if len(m.OAuth.RedirectURLs) != 1 || !strings.HasSuffix(m.OAuth.RedirectURLs[0], "/slack/oauth/callback") {
		t.Errorf("redirect urls = %q", m.OAuth.RedirectURLs)
	}
	for _, ev := range []string{"app_uninstalled", "tokens_revoked", "app_mention"} {
		if !slices.Contains(m.Settings.Events.Bot, ev) {
			t.Errorf("manifest does not subscribe to %s", ev)
		}
	}
}

// TestSlackGroupDecidersPerWorkspace: in multi-workspace mode a
// "slack_group:S…" decider is a group of the workspace the decision is
// made in, read with that workspace's token. Team B has a group of the
// same id whose member U_BOB is no member of team A's.
func TestSlackGroupDecidersPerWorkspace(t *testing.T) {
	t.Parallel()
	w := newTeamsWorld(t)
	tokA, tokB := w.install(t, "T_A"), w.install(t, "T_B")
	w.slack.mu.Lock()
	w.slack.groups = map[string][]string{"T_A/S_EDITORS": {"U_EDITOR"}, "T_B/S_EDITORS": {"U_BOB"}}
	w.slack.mu.Unlock()
	if err := w.env.Store.PutPolicy(context.Background(), "slack:T_A/C0123", board.Policy{Deciders: []string{"slack_group:S_EDITORS"}, Approvals: 1}, "test"); err != nil {
		t.Fatal(err)
	}
	const thread = "1690000000.000001"
	w.post(t, "/slack/events", "application/json", teamMention("T_A", "EvG1", "C0123", thread, "plan our daily research newspaper"))
	prev := w.slack.waitFor(t, "team A's preview", isTeamPreview(thread))
	pid := proposalID.FindStringSubmatch(prev.Form.Get("blocks"))[1]

	// Team A's U_BOB is in no editors group of team A: refused.
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", teamClick("T_A", "U_BOB", "bobnet_approve", pid, "C0123", prev.TS, thread))
	w.slack.waitFor(t, "U_BOB refused", func(c teamCall) bool {
		return c.Method == "chat.postEphemeral" && c.Form.Get("user") == "U_BOB" && strings.Contains(c.Form.Get("text"), "slack_group:S_EDITORS")
	})
	if p, _ := w.env.Engine.Proposal(context.Background(), board.ProposalID(pid)); p.State != board.ProposalPending {
		t.Fatalf("team B's group decided in team A: %s", p.State)
	}
	// Team A's editor approves.
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", teamClick("T_A", "U_EDITOR", "bobnet_approve", pid, "C0123", prev.TS, thread))
	w.slack.waitFor(t, "approved by team A's editor", func(c teamCall) bool {
		return c.Method == "chat.update" && strings.Contains(c.Form.Get("blocks"), `Approved by \u003c@U_EDITOR\u003e`)
	})
	lookups := 0
	for _, c := range w.slack.snapshot() {
		if c.Method != "usergroups.users.list" {
			continue
		}
		lookups++
		if c.Token != tokA || c.Form.Get("usergroup") != "S_EDITORS" {
			t.Errorf("group read with team %s's token for %q", map[string]string{tokA: "A", tokB: "B"}[c.Token], c.Form.Get("usergroup"))
		}
	}
	if lookups == 0 {
		t.Fatal("the group was never read")
	}
}
