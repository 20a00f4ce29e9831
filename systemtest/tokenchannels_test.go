package systemtest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestTokenChannels: `bobnet token create --channels` checks its
// patterns (exit 2 with the reason, nothing made) and makes a token that
// reaches only its channels, which `bobnet token list` shows; through a
// client held to openapi.json, that token posts, reads, decides and
// streams in its channel (the stream with ?access_token=), meets another
// channel's proposal and posts there as unknown, and lists only its
// boards; the token routes make, list and revoke tokens for an admin
// token that reaches everything, and refuse a limited one.
func TestTokenChannels(t *testing.T) {
	t.Parallel()
	rc := newCallbackReceiver(t)
	b := newBobNet(t, hooksFile(rc.srv.URL))
	b.boot(t)

	for _, tc := range []struct{ channels, says string }{
		{"slack:*/C1", "* may only end"},
		{"irc:#news", "known source"},
		{"console:newsroom,,slack:T0ONE/*", "it is empty"},
		{"console:", "names no channel"},
	} {
		out, errs, code := b.tokenCmd(t, "create", "bad", "--scopes", "read", "--channels", tc.channels)
		if code != 2 || !strings.Contains(errs, "--channels") || !strings.Contains(errs, tc.says) || out != "" {
			t.Errorf("--channels %q: exit %d, %q, want 2 saying %q", tc.channels, code, errs, tc.says)
		}
	}
	newsroom, code := b.token(t, "create", "newsroom-bot", "--scopes", "read,propose,approve,write", "--channels", "console:newsroom, console:hook-*")
	if code != 0 || !strings.HasPrefix(newsroom, "bobnet_") {
		t.Fatalf("create: %q %d", newsroom, code)
	}
	list, _ := b.token(t, "list")
	if !strings.Contains(list, "CHANNELS") || !strings.Contains(list, "console:newsroom,console:hook-*") || strings.Contains(list, "bad") {
		t.Fatalf("list:\n%s", list)
	}

	ct := newContractTransport(t)
	api := func(token, method, path string, body any) (int, map[string]any) {
		t.Helper()
		var raw []byte
		if body != nil {
			raw = []byte(fmt.Sprint(body))
		}
		return contractCall(t, ct, token, method, b.url+path, "application/json", raw, nil)
	}
	propose := func(token, channel string) string {
		t.Helper()
		status, out := api(token, "POST", "/api/v1/channels/"+channel+"/messages", `{"user":"alice","text":"plan our daily research newspaper"}`)
		if status != http.StatusAccepted {
			t.Fatalf("post to %s: %d %v", channel, status, out)
		}
		var r map[string]any
		until(t, "the proposal in "+channel, func() bool {
			_, r = api(bootstrap, "GET", fmt.Sprint("/api/v1/requests/", out["request_id"]), nil)
			return r["proposal_id"] != nil
		})
		return r["proposal_id"].(string)
	}
	mine := propose(newsroom, "newsroom")
	other := propose(bootstrap, "general")
	if status, out := api(newsroom, "GET", "/api/v1/proposals/"+other, nil); status != http.StatusNotFound {
		t.Errorf("another channel's proposal: %d %v", status, out)
	}
	if status, out := api(newsroom, "POST", "/api/v1/channels/general/messages", `{"user":"alice","text":"hello"}`); status != http.StatusNotFound {
		t.Errorf("posting to another channel: %d %v", status, out)
	}
	status, approved := api(newsroom, "POST", "/api/v1/proposals/"+mine+"/approve", `{"user":"alice"}`)
	if status != http.StatusOK {
		t.Fatalf("approve its own: %d %v", status, approved)
	}
	if status, out := api(bootstrap, "POST", "/api/v1/proposals/"+other+"/approve", `{"user":"alice"}`); status != http.StatusOK {
		t.Fatalf("approve general's: %d %v", status, out)
	}
	status, boards := api(newsroom, "GET", "/api/v1/boards", nil)
	if got := boards["boards"].([]any); status != http.StatusOK || len(got) != 1 || got[0].(map[string]any)["id"] != approved["board_id"] {
		t.Errorf("boards listed: %d %v", status, boards)
	}
	if status, _ := contractCall(t, ct, "", "GET", b.url+"/api/v1/channels/newsroom/events?access_token="+newsroom, "", nil, nil); status != http.StatusOK {
		t.Errorf("its stream with a query token: %d", status)
	}
	if status, _ := contractCall(t, ct, "", "GET", fmt.Sprint(b.url, "/api/v1/boards/", approved["board_id"], "/events?access_token=", newsroom), "", nil, nil); status != http.StatusOK {
		t.Errorf("its board's stream with a query token: %d", status)
	}

	// The token routes.
	status, made := api(bootstrap, "POST", "/api/v1/tokens", `{"name":"workspace","scopes":["read"],"channels":["slack:T0ONE/*"]}`)
	if status != http.StatusCreated || !strings.HasPrefix(fmt.Sprint(made["secret"]), "bobnet_") {
		t.Fatalf("create over REST: %d %v", status, made)
	}
	if status, out := api(made["secret"].(string), "GET", "/api/v1/boards", nil); status != http.StatusOK || len(out["boards"].([]any)) != 0 {
		t.Errorf("a workspace token lists: %d %v", status, out)
	}
	for _, tc := range []struct {
		token, method, path, body string
		want                      int
	}{
		{bootstrap, "POST", "/api/v1/tokens", `{"name":"x","scopes":["read"],"channels":["slack:*/C1"]}`, http.StatusBadRequest},
		{bootstrap, "POST", "/api/v1/tokens", `{"name":"workspace","scopes":["read"]}`, http.StatusConflict},
		{newsroom, "POST", "/api/v1/tokens", `{"name":"wider","scopes":["read"]}`, http.StatusForbidden},
		{newsroom, "GET", "/api/v1/tokens", "", http.StatusForbidden},
		{bootstrap, "GET", "/api/v1/tokens", "", http.StatusOK},
		{bootstrap, "DELETE", "/api/v1/tokens/workspace", "", http.StatusOK},
		{bootstrap, "DELETE", "/api/v1/tokens/workspace", "", http.StatusNotFound},
	} {
		var body any
		if tc.body != "" {
			body = tc.body
		}
		if status, out := api(tc.token, tc.method, tc.path, body); status != tc.want {
			t.Errorf("%s %s %s: %d %v, want %d", tc.method, tc.path, tc.body, status, out, tc.want)
		}
	}
	if status, _ := api(made["secret"].(string), "GET", "/api/v1/boards", nil); status != http.StatusUnauthorized {
		t.Errorf("the revoked token: %d", status)
	}
	for _, want := range []string{"createToken 201", "createToken 400", "createToken 403", "createToken 409", "listTokens 200", "listTokens 403",
		"revokeToken 200", "revokeToken 404", "getProposal 404", "postMessage 404", "streamChannelEvents 200", "streamBoardEvents 200"} {
		op, code, _ := strings.Cut(want, " ")
		var n int
		_, _ = fmt.Sscan(code, &n)
		if !ct.saw(op, n) {
			t.Errorf("never saw %s answer %s", op, code)
		}
	}
}
