package apitoken_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/store/storetest"
)

func TestStore(t *testing.T) {
	t.Parallel()
	db := storetest.NewStore(t)
	s := apitoken.NewTokens(db)
	ctx := context.Background()
	secret, err := s.Create(ctx, "ci", []apitoken.Scope{apitoken.ScopeRead, apitoken.ScopePropose}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "ci", []apitoken.Scope{apitoken.ScopeRead}, ""); !errors.Is(err, apitoken.ErrExists) {
		t.Fatalf("second ci: %v", err)
	}
	for _, bad := range []string{"Bad Name", "", ".ci", strings.Repeat("a", 65)} {
		if _, err := s.Create(ctx, bad, []apitoken.Scope{apitoken.ScopeRead}, ""); !errors.Is(err, apitoken.ErrBadName) {
			t.Fatalf("bad name %q: %v", bad, err)
		}
	}
	// Only the hash is stored.
	var n int
	_ = db.Pool().QueryRow(ctx, `SELECT count(*) FROM api_tokens WHERE position($1::bytea in hash) > 0 OR hash = $1::bytea`, []byte(secret)).Scan(&n)
	if n != 0 {
		t.Fatal("the secret is stored in clear")
	}
	tok, err := s.Lookup(ctx, secret)
	if err != nil || tok.Name != "ci" || !tok.Has(apitoken.ScopePropose) || tok.Has(apitoken.ScopeApprove) {
		t.Fatalf("lookup = %+v, %v", tok, err)
	}
	if _, err := s.Lookup(ctx, secret+"x"); !errors.Is(err, apitoken.ErrNotFound) {
		t.Fatalf("wrong secret: %v", err)
	}
	if err := s.Revoke(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(ctx, secret); !errors.Is(err, apitoken.ErrRevoked) {
		t.Fatalf("revoked: %v", err)
	}
	if err := s.Revoke(ctx, "ci"); !errors.Is(err, apitoken.ErrNotFound) {
		t.Fatalf("second revoke: %v", err)
	}
	// A revoked name can be issued again, with a new secret.
	again, err := s.Create(ctx, "ci", []apitoken.Scope{apitoken.ScopeAdmin}, "alice")
	if err != nil || again == secret {
		t.Fatalf("recreate: %v", err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || list[0].User != "alice" || !list[0].RevokedAt.IsZero() {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if _, err := s.Create(ctx, strings.Repeat("a", 64), []apitoken.Scope{apitoken.ScopeRead}, ""); err != nil {
		t.Fatalf("a 64-letter name: %v", err)
	}
}

func TestParseScopes(t *testing.T) {
	t.Parallel()
	if s, err := apitoken.ParseScopes("read, propose,read"); err != nil || len(s) != 2 {
		t.Fatalf("%v %v", s, err)
	}
	for _, bad := range []string{"", "root", "read,delete"} {
		if _, err := apitoken.ParseScopes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestRequiredScope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method, path string
		want         apitoken.Scope
	}{
		{"GET", "/api/v1/proposals/p_1", apitoken.ScopeRead},
		{"POST", "/api/v1/channels/general/messages", apitoken.ScopePropose},
		{"POST", "/api/v1/proposals/p_1/approve", apitoken.ScopeApprove},
		{"POST", "/api/v1/proposals/p_1/cancel", apitoken.ScopeApprove},
		{"POST", "/api/v1/proposals/p_1/withdraw", apitoken.ScopeApprove},
		{"GET", "/api/v1/policies/console:x", apitoken.ScopeRead},
		{"POST", "/api/v1/proposals/p_1/revise", apitoken.ScopePropose},
		{"PATCH", "/api/v1/cards/c_1", apitoken.ScopeWrite},
		{"PUT", "/api/v1/policies/console:x", apitoken.ScopeAdmin},
		{"GET", "/api/v1/usage", apitoken.ScopeAdmin},
		{"HEAD", "/api/v1/usage", apitoken.ScopeAdmin},
		{"GET", "/metrics", apitoken.ScopeAdmin},
		{"GET", "/api/v1/tokens", apitoken.ScopeAdmin},
		{"POST", "/api/v1/tokens", apitoken.ScopeAdmin},
		{"DELETE", "/api/v1/tokens/{name}", apitoken.ScopeAdmin},
	} {
		if got := apitoken.RequiredScope(tc.method, tc.path); got != tc.want {
			t.Errorf("%s %s = %s, want %s", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestGuard(t *testing.T) {
	t.Parallel()
	db := storetest.NewStore(t)
	s := apitoken.NewTokens(db)
	ctx := context.Background()
	read, _ := s.Create(ctx, "reader", []apitoken.Scope{apitoken.ScopeRead}, "")
	approver, _ := s.Create(ctx, "alice-bot", []apitoken.Scope{apitoken.ScopeApprove, apitoken.ScopeRead}, "alice")
	revoked, _ := s.Create(ctx, "old", []apitoken.Scope{apitoken.ScopeAdmin}, "")
	_ = s.Revoke(ctx, "old")

	var seenVia, seenBody string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seenVia = bot.Via(r.Context())
		b, _ := io.ReadAll(r.Body)
		seenBody = string(b)
		w.WriteHeader(http.StatusNoContent)
	})
	call := func(h http.Handler, method, path, token, body string) (int, map[string]any) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var out map[string]any
		_ = json.NewDecoder(bytes.NewReader(rec.Body.Bytes())).Decode(&out)
		return rec.Code, out
	}
	guarded := apitoken.NewGuard(s, "boot", storetest.Logger(t)).Middleware(next)
	approve := "/api/v1/proposals/p_1/approve"
	tests := []struct {
		name, method, path, token, body string
		want                            int
		says                            string
	}{
		{"no token", "GET", "/api/v1/proposals/p_1", "", "", 401, "missing API token"},
		{"bootstrap", "POST", approve, "boot", `{"user":"bob"}`, 204, ""},
		{"read may read", "GET", "/api/v1/proposals/p_1", read, "", 204, ""},
		{"read cannot approve", "POST", approve, read, `{"user":"bob"}`, 403, `needs "approve"`},
		{"revoked", "GET", "/api/v1/proposals/p_1", revoked, "", 401, "revoked"},
		{"unknown", "GET", "/api/v1/proposals/p_1", "bobnet_nope", "", 401, "unknown"},
		// The guard leaves bodies to the handler, which checks the user it
		// decoded with ActsFor (TestActsFor); it never reads a body, so
		// it cannot read one differently.
		{"bound, body untouched", "POST", approve, approver, `{"user":"bob"}}`, 204, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, out := call(guarded, tc.method, tc.path, tc.token, tc.body)
			msg, _ := out["error"].(string)
			if status != tc.want || !strings.Contains(msg, tc.says) {
				t.Fatalf("%d %v, want %d saying %q", status, out, tc.want, tc.says)
			}
		})
	}
	// The handler gets the whole body and the token's name for the audit.
	if status, _ := call(guarded, "POST", approve, approver, `{"user":"alice","feedback":"x"}`); status != 204 || seenBody != `{"user":"alice","feedback":"x"}` || seenVia != "token:alice-bot" {
		t.Fatalf("status %d, body %q, via %q", status, seenBody, seenVia)
	}
	// Without a bootstrap token (a loopback-only server) no token is needed,
	// but a token that is sent is still checked.
	open := apitoken.NewGuard(s, "", storetest.Logger(t)).Middleware(next)
	if status, _ := call(open, "POST", approve, "", `{"user":"bob"}`); status != 204 {
		t.Fatalf("open server: %d", status)
	}
	if status, _ := call(open, "POST", approve, read, `{"user":"bob"}`); status != 403 {
		t.Fatalf("open server, read token approving: %d", status)
	}
}

func TestActsFor(t *testing.T) {
	t.Parallel()
	db := storetest.NewStore(t)
	s := apitoken.NewTokens(db)
	ctx := context.Background()
	bound, _ := s.Create(ctx, "alice-bot", []apitoken.Scope{apitoken.ScopeApprove}, "alice")
	free, _ := s.Create(ctx, "any-bot", []apitoken.Scope{apitoken.ScopeApprove}, "")
	var got error
	guarded := apitoken.NewGuard(s, "boot", storetest.Logger(t)).Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = apitoken.ActsFor(r.Context(), r.URL.Query().Get("as"))
	}))
	for _, tc := range []struct {
		token, as string
		wrong     bool
	}{
		{bound, "alice", false},
		{bound, "bob", true},
		{bound, "", true},
		{bound, "Alice", true},
		{free, "bob", false},
		{"boot", "bob", false},
	} {
		req := httptest.NewRequest("POST", "/api/v1/proposals/p_1/approve?as="+tc.as, nil)
		req.Header.Set("Authorization", "Bearer "+tc.token)
		got = errors.New("handler not reached")
		guarded.ServeHTTP(httptest.NewRecorder(), req)
		if errors.Is(got, apitoken.ErrWrongUser) != tc.wrong || (!tc.wrong && got != nil) {
			t.Errorf("token %.12s… as %q: %v, want wrong user: %v", tc.token, tc.as, got, tc.wrong)
		}
		if tc.wrong && !strings.Contains(got.Error(), `acts only for user "alice"`) {
			t.Errorf("as %q: %q does not say whom the token acts for", tc.as, got)
		}
	}
	// Without a guard in front (no token at all) anyone may be named.
	if err := apitoken.ActsFor(context.Background(), "bob"); err != nil {
		t.Fatal(err)
	}
}

// Only the event streams take a token from the query string, and they are
// known by the route a request was matched to: a path that ends in
// "/events" through an encoded slash is the policy route, and a token in
// its query is no token.
func TestQueryTokenOnlyOnEventStreams(t *testing.T) {
	t.Parallel()
	r := chi.NewRouter()
	r.Group(func(r chi.Router) {
		r.Use(apitoken.NewGuard(noTokens{}, "boot", slog.New(slog.NewTextHandler(io.Discard, nil))).Middleware)
		ok := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }
		r.Get("/api/v1/channels/{channel}/events", ok)
		r.Get("/api/v1/boards/{id}/events", ok)
		r.Get("/api/v1/policies/{channel}", ok)
		r.Put("/api/v1/policies/{channel}", ok)
		r.Post("/api/v1/proposals/{id}/approve", ok)
	})
	for _, tc := range []struct {
		method, target string
		want           int
	}{
		{"GET", "/api/v1/channels/general/events?access_token=boot", 200},
		{"GET", "/api/v1/boards/b_1/events?access_token=boot", 200},
		{"GET", "/api/v1/channels/general/events?access_token=nope", 401},
		{"PUT", "/api/v1/policies/console:zz%2Fevents?access_token=boot", 401},
		{"GET", "/api/v1/policies/console:zz%2Fevents?access_token=boot", 401},
		{"GET", "/api/v1/policies/console:zz%2Fchannels%2Fx%2Fevents?access_token=boot", 401},
		{"POST", "/api/v1/proposals/p%2Fevents/approve?access_token=boot", 401},
		{"PUT", "/api/v1/policies/console:zz%2Fevents", 401},
	} {
		req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(`{}`))
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.target, rec.Code, strings.TrimSpace(rec.Body.String()), tc.want)
		}
	}
	// With the token in its header, the policy route is reached.
	req := httptest.NewRequest("PUT", "/api/v1/policies/console:zz%2Fevents", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer boot")
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("with the header: %d %s", rec.Code, rec.Body)
	}
}

// noTokens knows no tokens; only the bootstrap one is accepted.
type noTokens struct{}

func (noTokens) Lookup(context.Context, string) (apitoken.Token, error) {
	return apitoken.Token{}, apitoken.ErrNotFound
}
