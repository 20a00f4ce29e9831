package systemtest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// The whole app, with an API token, as a browser and a client see it:
// no page can be framed, query tokens work on event streams only (not on
// a policy path ending in an encoded "/events"), and a card's text is
// checked as a plan's is (a NUL is a 400 naming it, not a 503).
func TestAppHardening(t *testing.T) {
	t.Parallel()
	a := start(t, withEnv(map[string]string{"BOBNET_API_TOKEN": "tok-apisec"}))
	var accepted struct {
		RequestID string `json:"request_id"`
	}
	if code := a.call(t, "POST", "/api/v1/channels/hard/messages", map[string]string{"user": "alice", "text": "plan our daily research newspaper"}, &accepted); code != http.StatusAccepted {
		t.Fatalf("post message: %d", code)
	}
	r := a.waitRequest(t, accepted.RequestID)
	var approved struct {
		BoardID string `json:"board_id"`
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+r.ProposalID+"/approve", map[string]string{"user": "alice"}, &approved); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}

	get := func(path string, header http.Header) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", a.URL+path, nil)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	auth := http.Header{"Authorization": {"Bearer tok-apisec"}}
	for _, path := range []string{"/", "/c/hard", "/static/", "/static/index.html", "/static/app.js", "/proposals/" + r.ProposalID,
		"/boards/" + approved.BoardID, "/api/v1/boards/" + approved.BoardID, "/healthz", "/no-such-page"} {
		resp := get(path, auth)
		h := resp.Header
		if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s (%d, %s): CSP %q, X-Frame-Options %q, X-Content-Type-Options %q", path, resp.StatusCode, h.Get("Content-Type"),
				h.Get("Content-Security-Policy"), h.Get("X-Frame-Options"), h.Get("X-Content-Type-Options"))
		}
	}

	// Query tokens: the event stream takes one, the policy route does not,
	// whatever its path ends in.
	if resp := get("/api/v1/channels/hard/events?access_token=tok-apisec", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("event stream with a query token: %d", resp.StatusCode)
	}
	if resp := get("/api/v1/boards/"+approved.BoardID+"/events?access_token=tok-apisec", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("board event stream with a query token: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("PUT", a.URL+"/api/v1/policies/console:zz%2Fevents?access_token=tok-apisec", strings.NewReader(`{"approvals":1}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("PUT policy with a query token: %d %s", resp.StatusCode, b)
	}

	// Card text: a NUL is refused by name, invisible characters go.
	var out struct {
		Error string
		Title string
	}
	if code := a.call(t, "PATCH", "/api/v1/cards/NEWS-1", `{"user":"alice","title":"QA\u0000 the front page"}`, &out); code != http.StatusBadRequest || !strings.Contains(out.Error, "U+0000") {
		t.Fatalf("NUL title: %d %q", code, out.Error)
	}
	if code := a.call(t, "PATCH", "/api/v1/cards/NEWS-1", `{"user":"alice","body":"red \u001b[31m text"}`, &out); code != http.StatusBadRequest || !strings.Contains(out.Error, "U+001B") {
		t.Fatalf("escape in a body: %d %q", code, out.Error)
	}
	if code := a.call(t, "PATCH", "/api/v1/cards/NEWS-1", `{"user":"alice","title":"Pay \u202eecnavda\u202c invoice\u200b"}`, &out); code != http.StatusOK || out.Title != "Pay ecnavda invoice" {
		t.Fatalf("bidi title: %d %q %q", code, out.Title, out.Error)
	}
}

// A token bound to alice, in a deployment where anyone may decide, cannot
// approve as bob by leaving a brace after the body or naming the user
// twice: the body is refused before anything happens, and the proposal
// stays pending until alice approves it as herself.
func TestBoundTokenCannotApproveAsAnother(t *testing.T) {
	t.Parallel()
	a := start(t, withEnv(map[string]string{"BOBNET_API_TOKEN": "tok-boot", "BOBNET_ANY_MEMBER_DECIDES": "true"}))
	db, err := store.Open(context.Background(), a.DB, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	alice, err := apitoken.NewTokens(db).Create(context.Background(), "alice-bot", apitoken.Scopes, "alice")
	if err != nil {
		t.Fatal(err)
	}
	a.token = alice
	var accepted struct {
		RequestID string `json:"request_id"`
	}
	if code := a.call(t, "POST", "/api/v1/channels/bound/messages", map[string]string{"user": "alice", "text": "plan our daily research newspaper"}, &accepted); code != http.StatusAccepted {
		t.Fatalf("post message: %d", code)
	}
	r := a.waitRequest(t, accepted.RequestID)
	approve := "/api/v1/proposals/" + r.ProposalID + "/approve"
	for _, body := range []string{`{"user":"bob"}}`, `{"user":"bob"} {"user":"alice"}`, `{"user":"alice","user":"bob"}`, `{"user":"bob"}`} {
		var out struct{ Error string }
		if code := a.call(t, "POST", approve, body, &out); code != http.StatusBadRequest && code != http.StatusForbidden {
			t.Fatalf("%s: %d %q", body, code, out.Error)
		}
	}
	var p struct {
		State     string
		DecidedBy string `json:"decided_by"`
	}
	if code := a.call(t, "GET", "/api/v1/proposals/"+r.ProposalID, nil, &p); code != http.StatusOK || p.State != "pending" {
		t.Fatalf("after the forged approvals: %d %+v", code, p)
	}
	if code := a.call(t, "POST", approve, `{"user":"alice"}`, nil); code != http.StatusOK {
		t.Fatalf("alice approving as herself: %d", code)
	}
}
