package systemtest

import (
	"net/http"
	"testing"
)

// pageHeaders are the headers by which a browser keeps a page safe, and
// which every HTML page's route must send exactly as listed below.
var pageHeaders = []string{"Content-Type", "Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy", "Cache-Control"}

// TestPageSecurityHeaders records, byte for byte, the security headers of
// every page route BobNet serves (board page and script, run edition,
// proposal page, console, Slack install pages), found and missing, through
// the whole app's router and its site-wide middleware. It was written
// before the pages moved into one package, so a move that changed any
// route's headers fails here.
func TestPageSecurityHeaders(t *testing.T) {
	t.Parallel()
	a := start(t, withEnv(map[string]string{"SLACK_CLIENT_ID": "1234.5678", "SLACK_CLIENT_SECRET": "cs", "SLACK_SIGNING_SECRET": "ss", "BOBNET_ENCRYPTION_KEY": randomKey()}))
	var accepted struct {
		RequestID string `json:"request_id"`
	}
	if code := a.call(t, "POST", "/api/v1/channels/heads/messages", map[string]string{"user": "alice", "text": "plan our daily research newspaper"}, &accepted); code != http.StatusAccepted {
		t.Fatalf("post message: %d", code)
	}
	r := a.waitRequest(t, accepted.RequestID)
	var approved struct {
		BoardID string `json:"board_id"`
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+r.ProposalID+"/approve", map[string]string{"user": "alice"}, &approved); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	if code := a.call(t, "POST", "/api/v1/boards/"+approved.BoardID+"/runs", map[string]string{"user": "alice"}, nil); code != http.StatusCreated {
		t.Fatalf("start a run: %d", code)
	}

	const (
		html      = "text/html; charset=utf-8"
		plain     = "text/plain; charset=utf-8"
		siteCSP   = "default-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"
		boardCSP  = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
		runCSP    = "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
		propCSP   = "default-src 'none'; style-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"
		nosniff   = "nosniff"
		deny      = "DENY"
		noReferer = "no-referrer"
	)
	b := approved.BoardID
	tests := []struct {
		path   string
		status int
		want   []string // in the order of pageHeaders
	}{
		{"/boards/" + b, 200, []string{html, boardCSP, deny, nosniff, noReferer, "no-store"}},
		{"/boards/b_nosuchboardnosuchboard00", 404, []string{html, siteCSP, deny, nosniff, "", ""}},
		{"/boards/not-an-id", 404, []string{html, siteCSP, deny, nosniff, "", ""}},
		{"/board-static/board.js", 200, []string{"text/javascript; charset=utf-8", siteCSP, deny, nosniff, "", "no-cache"}},
		{"/boards/" + b + "/runs/1", 200, []string{html, runCSP, deny, nosniff, noReferer, ""}},
		{"/boards/" + b + "/runs/9", 404, []string{plain, siteCSP, deny, nosniff, "", ""}},
		{"/boards/" + b + "/runs/x", 404, []string{plain, siteCSP, deny, nosniff, "", ""}},
		{"/proposals/" + r.ProposalID, 200, []string{html, propCSP, deny, nosniff, "", "no-store"}},
		{"/proposals/p_nosuchproposal", 404, []string{plain, siteCSP, deny, nosniff, "", ""}},
		{"/", 200, []string{html, siteCSP, deny, nosniff, "", ""}},
		{"/c/heads", 200, []string{html, siteCSP, deny, nosniff, "", ""}},
		{"/static/app.js", 200, []string{"text/javascript; charset=utf-8", siteCSP, deny, nosniff, "", ""}},
		{"/slack/install", 200, []string{html, siteCSP, deny, nosniff, "", "no-store"}},
		{"/slack/oauth/callback?error=access_denied", 400, []string{html, siteCSP, deny, nosniff, "", "no-store"}},
		{"/slack/oauth/callback?state=forged&code=c", 400, []string{html, siteCSP, deny, nosniff, "", "no-store"}},
		// Slack's endpoints answer Slack's servers without the headers;
		// a browser's GET of one is refused with them.
		{"/slack/events", 405, []string{"application/json", siteCSP, deny, nosniff, "", ""}},
		{"/no/such/page", 404, []string{"application/json", siteCSP, deny, nosniff, "", ""}},
	}
	for _, tt := range tests {
		resp, err := http.Get(a.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%s: status %d, want %d", tt.path, resp.StatusCode, tt.status)
		}
		for i, name := range pageHeaders {
			if got := resp.Header.Values(name); len(got) > 1 || resp.Header.Get(name) != tt.want[i] {
				t.Errorf("%s: %s %q, want %q", tt.path, name, got, tt.want[i])
			}
		}
	}
}
