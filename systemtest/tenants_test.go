package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/migrations"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/secretbox"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// The two Slack workspaces the tenant tests drive, a channel and a person
// in each, and a console channel: none of these may show in /metrics.
var tenantIDs = []string{"TAAAA", "TBBBB", "CAAA1", "CBBB1", "UAAA1", "UBBB1", "tenant-zeta"}

// tokensPerCall is what the scripted model reports each planning call
// cost, so a channel's use is a multiple of it.
const tokensPerCall = 700

const adminToken = "tenant-admin-token"

// startTwoWorkspaces serves BobNet installed (OAuth, multi-workspace
// mode) in workspaces TAAAA and TBBBB, with a Slack stand-in, an admin
// token, and a scripted model that reports tokensPerCall per call.
func startTwoWorkspaces(t *testing.T) (*testApp, *reviewSlack) {
	t.Helper()
	bottest.Redis(t)
	sink := newReviewSlack(t)
	db := storetest.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := migrations.Apply(context.Background(), pool, storetest.Logger(t)); err != nil {
		t.Fatal(err)
	}
	key := randomKey()
	box, _ := secretbox.New(key)
	installs := store.New(pool, storetest.Logger(t)).SlackInstallations(box)
	for _, team := range []string{"TAAAA", "TBBBB"} {
		if err := installs.Save(context.Background(), board.SlackInstallation{ID: team, TeamID: team, BotToken: "xoxb-" + team, BotUserID: "UBOT"}); err != nil {
			t.Fatal(err)
		}
	}
	a := start(t, withEnv(map[string]string{
		"DATABASE_URL": db, "BOBNET_API_TOKEN": adminToken,
		"SLACK_CLIENT_ID": "1234.5678", "SLACK_CLIENT_SECRET": "cs", "SLACK_SIGNING_SECRET": "shh", "BOBNET_ENCRYPTION_KEY": key,
		"SLACK_API_URL": sink.srv.URL + "/api/",
		// Not about drafts: previews are posted as messages.
		"BOBNET_MODEL_STREAM": "off",
	}))
	plan := plannertest.NewspaperPlan(t)
	a.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply {
		return plannertest.Reply{Content: plan, Tokens: tokensPerCall}
	})
	return a, sink
}

// mention posts a signed app_mention of user in channel of team, and
// waits for its preview; it returns the proposal's id.
func mention(t *testing.T, a *testApp, sink *reviewSlack, team, channel, user, ts string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": team, "api_app_id": "A1", "event_id": "Ev" + team + ts, "event_time": 1700000000,
		"event": map[string]any{"type": "app_mention", "user": user, "text": "<@UBOT> plan our daily research newspaper", "ts": ts, "channel": channel},
	})
	if code, out := signedSlack(t, a, "/slack/events", "application/json", string(body)); code != http.StatusOK {
		t.Fatalf("mention in %s/%s: %d %s", team, channel, code, out)
	}
	preview := sink.waitFor(t, "preview in "+channel+" at "+ts, func(c reviewCall) bool {
		return c.Method == "chat.postMessage" && c.Form.Get("channel") == channel && c.Form.Get("thread_ts") == ts && previewApprove.MatchString(c.Form.Get("blocks"))
	})
	return previewApprove.FindStringSubmatch(preview.Form.Get("blocks"))[1]
}

// scrapeFamilies reads /metrics at base with token ("" for none) with
// Prometheus' own parser.
func scrapeFamilies(t *testing.T, base, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/metrics: %d %s", base, resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return fams
}

// sample is the value of family's series with exactly labels, and
// whether there is one.
func sample(fams map[string]*dto.MetricFamily, family string, labels map[string]string) (float64, bool) {
	for _, m := range fams[family].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if fmt.Sprint(got) == fmt.Sprint(labels) {
			return m.GetCounter().GetValue() + m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestMetricsNameNoTenant drives requests through Slack's event route in
// two workspaces and through the API in a console channel, approves one,
// and reads /metrics with Prometheus' parser: the traffic is counted, and
// no label value of any series holds a workspace, channel or user id.
// Each channel's own use is then read from GET /api/v1/usage.
func TestMetricsNameNoTenant(t *testing.T) {
	t.Parallel()
	a, sink := startTwoWorkspaces(t)
	a.token = adminToken
	// Workspace A's channel has a budget; B's has none.
	budget := board.Policy{Deciders: []string{"requester", "admins"}, Approvals: 1, SelfApproval: true, Budget: &board.Budget{TokensPerDay: 5000}}
	if code := a.call(t, "PUT", "/api/v1/policies/slack:TAAAA%2FCAAA1", budget, nil); code != http.StatusOK {
		t.Fatalf("put policy: %d", code)
	}

	first := mention(t, a, sink, "TAAAA", "CAAA1", "UAAA1", "1700000000.000101")
	mention(t, a, sink, "TAAAA", "CAAA1", "UAAA1", "1700000000.000102")
	mention(t, a, sink, "TBBBB", "CBBB1", "UBBB1", "1700000000.000201")
	a.propose(t, "tenant-zeta", "alice")
	if code := a.call(t, "POST", "/api/v1/proposals/"+first+"/approve", map[string]string{"user": "UAAA1"}, nil); code != http.StatusOK {
		t.Fatalf("approve in workspace A: %d", code)
	}

	var fams map[string]*dto.MetricFamily
	until(t, "the approval and every answer counted", func() bool {
		fams = scrapeFamilies(t, a.URL, adminToken)
		committed := fams["bobnet_approve_to_commit_seconds"].GetMetric()
		answered, _ := sample(fams, "bobnet_requests_total", map[string]string{"outcome": "proposal", "source": "slack"})
		return len(committed) == 1 && committed[0].GetHistogram().GetSampleCount() == 1 && answered == 3
	})
	for source, want := range map[string]float64{"slack": 3 * tokensPerCall, "console": tokensPerCall} {
		if got, _ := sample(fams, "bobnet_model_tokens_total", map[string]string{"source": source}); got != want {
			t.Errorf("bobnet_model_tokens_total{source=%q} = %v, want %v", source, got, want)
		}
	}
	if got, _ := sample(fams, "bobnet_proposals_total", map[string]string{"outcome": "approved"}); got != 1 {
		t.Errorf("approved proposals = %v, want 1", got)
	}
	series := 0
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				for _, id := range tenantIDs {
					if strings.Contains(l.GetValue(), id) || strings.Contains(l.GetName(), id) {
						t.Errorf("%s has %s=%q, which names %s", name, l.GetName(), l.GetValue(), id)
					}
				}
				if strings.HasPrefix(name, "bobnet_") && strings.ContainsAny(l.GetValue(), ":/") {
					t.Errorf("%s has %s=%q, which looks like a channel key", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
	if series < 50 {
		t.Fatalf("only %d series scraped", series)
	}

	// Each channel's use, from the API.
	ct := newContractTransport(t)
	usage := func(token, channel string) (int, map[string]any) {
		t.Helper()
		return contractCall(t, ct, token, "GET", a.URL+"/api/v1/usage?channel="+url.QueryEscape(channel), "", nil, nil)
	}
	status, ua := usage(adminToken, "slack:TAAAA/CAAA1")
	wantA := map[string]any{"tokens_per_day": 5000.0, "remaining": 5000.0 - 2*tokensPerCall, "over": false}
	if status != http.StatusOK || ua["channel"] != "slack:TAAAA/CAAA1" || ua["tokens"] != 2.0*tokensPerCall || fmt.Sprint(ua["budget"]) != fmt.Sprint(wantA) || ua["day"] == nil || ua["resets"] == nil {
		t.Errorf("usage of workspace A's channel: %d %v", status, ua)
	}
	status, ub := usage(adminToken, "slack:TBBBB/CBBB1")
	if _, has := ub["budget"]; status != http.StatusOK || ub["tokens"] != 1.0*tokensPerCall || has {
		t.Errorf("usage of workspace B's channel: %d %v", status, ub)
	}
	status, uc := usage(adminToken, "console:tenant-zeta")
	if status != http.StatusOK || uc["tokens"] != 1.0*tokensPerCall {
		t.Errorf("usage of the console channel: %d %v", status, uc)
	}
	// A channel nobody spoke in has spent nothing; a bare Slack id is
	// another channel than a workspace's.
	for _, ch := range []string{"slack:TAAAA/CIDLE", "slack:CAAA1", "matrix:!quiet:example.org"} {
		if status, u := usage(adminToken, ch); status != http.StatusOK || u["tokens"] != 0.0 {
			t.Errorf("usage of %s: %d %v", ch, status, u)
		}
	}
	// Percent-encoded, as a policy's URL would be: the same channel.
	if status, u := contractCall(t, ct, adminToken, "GET", a.URL+"/api/v1/usage?channel=slack:TAAAA%2FCAAA1", "", nil, nil); status != http.StatusOK || u["tokens"] != 2.0*tokensPerCall {
		t.Errorf("percent-encoded key: %d %v", status, u)
	}
}

// TestUsageAndMetricsNeedTheAdminScope: on the public listener /metrics
// and GET /api/v1/usage answer 401 without a token (or with an unknown
// one), 403 to a token without the admin scope, and 200 to the bootstrap
// token and to a token with admin; a bad channel is a 400 that says why.
func TestUsageAndMetricsNeedTheAdminScope(t *testing.T) {
	t.Parallel()
	a := start(t, withEnv(map[string]string{"BOBNET_API_TOKEN": adminToken}))
	ctx := context.Background()
	db, err := store.Open(ctx, a.DB, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tokens := apitoken.NewTokens(db)
	reader, err := tokens.Create(ctx, "reader", []apitoken.Scope{apitoken.ScopeRead, apitoken.ScopePropose, apitoken.ScopeApprove, apitoken.ScopeWrite}, "")
	if err != nil {
		t.Fatal(err)
	}
	ops, err := tokens.Create(ctx, "ops", []apitoken.Scope{apitoken.ScopeAdmin}, "")
	if err != nil {
		t.Fatal(err)
	}
	ct := newContractTransport(t)
	get := func(token, path string) (int, map[string]any) {
		t.Helper()
		return contractCall(t, ct, token, "GET", a.URL+path, "", nil, nil)
	}
	for _, path := range []string{"/metrics", "/api/v1/usage?channel=console:general"} {
		status, out := get("", path)
		if status != http.StatusUnauthorized || !strings.Contains(fmt.Sprint(out["error"]), "missing API token") {
			t.Errorf("%s without a token: %d %v", path, status, out)
		}
		if status, _ := get("not-a-token", path); status != http.StatusUnauthorized {
			t.Errorf("%s with an unknown token: %d", path, status)
		}
		status, out = get(reader, path)
		if status != http.StatusForbidden || out["needs"] != "admin" || out["token"] != "reader" {
			t.Errorf("%s with a token without admin: %d %v", path, status, out)
		}
		for name, token := range map[string]string{"bootstrap": adminToken, "ops": ops} {
			if status, _ := get(token, path); status != http.StatusOK {
				t.Errorf("%s with the %s token: %d", path, name, status)
			}
		}
	}
	if _, ok := scrapeFamilies(t, a.URL, ops)["go_goroutines"]; !ok {
		t.Error("an admin token's scrape has no Go runtime series")
	}

	for query, says := range map[string]string{
		"":                                             "give one channel",
		"?channel=":                                    "empty",
		"?channel=console:a&channel=console:b":         "give one channel",
		"?channel=general":                             "not a channel key",
		"?channel=default":                             "not a channel key",
		"?channel=irc:%23general":                      "unknown source",
		"?channel=slack:*":                             "Slack channel",
		"?channel=slack:TAAAA/*":                       "Slack channel",
		"?channel=slack:T/C/D":                         "Slack channel",
		"?channel=console:Bad%20Name":                  "console channel",
		"?channel=console:*":                           "console channel",
		"?channel=matrix:room":                         "Matrix room",
		"?channel=matrix:!room:ex%0Aample":             "Matrix room",
		"?channel=console:" + strings.Repeat("x", 300): "longer than 300",
		"?channel=console:general&since=yesterday":     "unknown query parameter",
	} {
		status, out := get(adminToken, "/api/v1/usage"+query)
		if status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(out["error"]), says) {
			t.Errorf("usage%s: %d %v, want 400 saying %q", query, status, out, says)
		}
	}
	for _, want := range []string{"metrics 200", "metrics 401", "metrics 403", "getUsage 200", "getUsage 400", "getUsage 401", "getUsage 403"} {
		op, code, _ := strings.Cut(want, " ")
		var n int
		_, _ = fmt.Sscan(code, &n)
		if !ct.saw(op, n) {
			t.Errorf("never saw %s answer %s", op, code)
		}
	}
}

// TestAdminListener: with BOBNET_ADMIN_LISTEN, serve answers /metrics on
// the admin address without a token, and nothing public there (404 for
// the API, the console, the pages, Slack's routes); the public
// listener's /metrics still needs the admin token. Both listeners close
// when serve stops.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	sink := newReviewSlack(t)
	s := start(t, withAdminListener(), withEnv(map[string]string{"BOBNET_API_TOKEN": adminToken, "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "shh", "SLACK_API_URL": sink.srv.URL + "/api/"}))
	if s.AdminURL == "" {
		t.Fatal("no admin listener")
	}
	if _, ok := scrapeFamilies(t, s.AdminURL, "")["bobnet_queue_depth"]; !ok {
		t.Error("the admin listener's /metrics has no bobnet_queue_depth")
	}
	do := func(method, url, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type") + " " + string(body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if status, body := do("GET", s.AdminURL+path, ""); status != http.StatusOK {
			t.Errorf("admin %s: %d %s", path, status, body)
		}
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/"}, {"GET", "/api/v1/boards"}, {"GET", "/api/v1/usage?channel=console:general"}, {"GET", "/api/v1/openapi.json"},
		{"GET", "/api/v1/channels"}, {"POST", "/api/v1/channels/general/messages"}, {"GET", "/c/general"}, {"GET", "/static/app.js"},
		{"GET", "/boards/b_aaaaaaaaaaaaaaaaaaaaaaaaaa"}, {"POST", "/slack/events"}, {"POST", "/api/v1/hooks/forms"},
	} {
		for _, token := range []string{"", adminToken} {
			status, body := do(r.method, s.AdminURL+r.path, token)
			if status != http.StatusNotFound || !strings.HasPrefix(body, "application/json") {
				t.Errorf("admin %s %s (token %q): %d %s, want a JSON 404", r.method, r.path, token, status, body)
			}
		}
	}
	if status, _ := do("POST", s.AdminURL+"/metrics", ""); status != http.StatusMethodNotAllowed {
		t.Errorf("admin POST /metrics: %d", status)
	}
	// The public listener: /metrics with the admin token only, the rest
	// as always.
	if status, body := do("GET", s.URL+"/metrics", ""); status != http.StatusUnauthorized || !strings.HasPrefix(body, "application/json") {
		t.Errorf("public /metrics without a token: %d %s", status, body)
	}
	if _, ok := scrapeFamilies(t, s.URL, adminToken)["bobnet_queue_depth"]; !ok {
		t.Error("the public /metrics with the admin token has no bobnet_queue_depth")
	}
	if status, _ := do("GET", s.URL+"/api/v1/boards", adminToken); status != http.StatusOK {
		t.Errorf("public API: %d", status)
	}
	if err := s.stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	for _, base := range []string{s.URL, s.AdminURL} {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			t.Errorf("%s still answers after serve returned", base)
		}
	}
}
