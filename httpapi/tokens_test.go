package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestTokenRoutes: an admin token makes a token limited to channels (its
// secret shown once), lists tokens without secrets or hashes, and
// revokes one; bad bodies are 400s naming what is wrong and store
// nothing; other tokens, and admin tokens limited to channels or bound
// to a user, are refused.
func TestTokenRoutes(t *testing.T) {
	t.Parallel()
	db := storetest.NewStore(t)
	tokens := apitoken.NewTokens(db)
	ctx := context.Background()
	r := chi.NewRouter()
	r.Group(func(r chi.Router) {
		r.Use(apitoken.NewGuard(tokens, "boot", discard()).Middleware)
		httpapi.NewTokens(tokens, discard()).Routes(r)
	})
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	call := func(token, method, path, body string) (int, string) {
		t.Helper()
		return bearerCall(t, srv.URL, token, method, path, body)
	}

	code, body := call("boot", "POST", "/api/v1/tokens", `{"name":"ci","scopes":["read","approve"],"user":"alice","channels":["slack:T0ONE/*"," console:*"]}`)
	var made struct {
		Name, User, Secret string
		Scopes, Channels   []string
	}
	if code != 201 || json.Unmarshal([]byte(body), &made) != nil || made.Name != "ci" || made.User != "alice" || !strings.HasPrefix(made.Secret, "bobnet_") ||
		strings.Join(made.Scopes, ",") != "read,approve" || strings.Join(made.Channels, ",") != "slack:T0ONE/*,console:*" {
		t.Fatalf("create: %d %s", code, body)
	}
	tok, err := tokens.Lookup(ctx, made.Secret)
	if err != nil || !tok.Reaches("console:x") || tok.Reaches("slack:C1") || tok.User != "alice" {
		t.Fatalf("the secret finds %+v, %v", tok, err)
	}
	if code, body := call("boot", "POST", "/api/v1/tokens", `{"name":"all","scopes":["admin"]}`); code != 201 || !strings.Contains(body, `"channels":[]`) {
		t.Fatalf("create an unlimited token: %d %s", code, body)
	}
	code, body = call("boot", "GET", "/api/v1/tokens", "")
	var list struct {
		Tokens []struct {
			Name     string
			Channels []string
			User     string
		}
	}
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list.Tokens) != 2 || list.Tokens[1].Name != "ci" ||
		strings.Join(list.Tokens[1].Channels, ",") != "slack:T0ONE/*,console:*" || list.Tokens[0].Channels == nil || list.Tokens[1].User != "alice" {
		t.Fatalf("list: %d %s", code, body)
	}
	for _, secretish := range []string{made.Secret, "secret", "hash"} {
		if strings.Contains(body, secretish) {
			t.Fatalf("the list shows %q: %s", secretish, body)
		}
	}

	for _, tc := range []struct{ body, says string }{
		{`{"name":"x","scopes":["read"],"channels":["slack:*/x"]}`, "* may only end"},
		{`{"name":"x","scopes":["read"],"channels":[""]}`, "empty"},
		{`{"name":"x","scopes":["read"],"channels":["irc:news"]}`, "known source"},
		{`{"name":"x","scopes":["read"],"channels":["*"]}`, "known source"},
		{`{"name":"x","scopes":["read"],"channels":["console:"]}`, "names no channel"},
		{`{"name":"x","scopes":["read"],"channels":[]}`, "at least one pattern"},
		{`{"name":"x","scopes":["root"]}`, "unknown scope"},
		{`{"name":"x","scopes":[]}`, "at least one scope"},
		{`{"name":"x","scopes":["read,admin"]}`, "each scope once"},
		{`{"name":"X Y","scopes":["read"]}`, "token names"},
		{`{"name":"x","scopes":["read"],"user":"a b"}`, `\"user\" is left out`},
		{`{"name":"x","scopes":["read"],"colour":"red"}`, "unknown field"},
	} {
		code, body := call("boot", "POST", "/api/v1/tokens", tc.body)
		if code != 400 || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %s, want 400 saying %q", tc.body, code, body, tc.says)
		}
	}
	if code, body := call("boot", "POST", "/api/v1/tokens", `{"name":"ci","scopes":["read"]}`); code != 409 {
		t.Fatalf("a second ci: %d %s", code, body)
	}
	if all, _ := tokens.List(ctx); len(all) != 2 {
		t.Fatalf("refused bodies stored tokens: %+v", all)
	}

	// Only an admin token that reaches everything and acts for anyone
	// manages tokens.
	writer, _ := tokens.Create(ctx, "writer", []apitoken.Scope{apitoken.ScopeRead, apitoken.ScopeWrite}, "")
	limitedAdmin, _ := tokens.CreateLimited(ctx, "tenant-admin", []apitoken.Scope{apitoken.ScopeAdmin}, "", []string{"console:*"})
	boundAdmin, _ := tokens.Create(ctx, "alice-admin", []apitoken.Scope{apitoken.ScopeAdmin}, "alice")
	for _, tc := range []struct{ token, says string }{
		{writer, `needs \"admin\"`},
		{limitedAdmin, "limited to channels"},
		{boundAdmin, "bound to a user"},
	} {
		for _, req := range [][3]string{{"GET", "/api/v1/tokens", ""}, {"POST", "/api/v1/tokens", `{"name":"mine","scopes":["admin"]}`}, {"DELETE", "/api/v1/tokens/ci", ""}} {
			if code, body := call(tc.token, req[0], req[1], req[2]); code != 403 || !strings.Contains(body, tc.says) {
				t.Errorf("%s %s with %.16s…: %d %s, want 403 saying %s", req[0], req[1], tc.token, code, body, tc.says)
			}
		}
	}
	if _, err := tokens.Lookup(ctx, made.Secret); err != nil {
		t.Fatalf("a refused DELETE revoked ci: %v", err)
	}

	if code, body := call("boot", "DELETE", "/api/v1/tokens/ci", ""); code != 200 || !strings.Contains(body, `"revoked":true`) {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if _, err := tokens.Lookup(ctx, made.Secret); err == nil {
		t.Fatal("the revoked token still works")
	}
	if code, body := call("boot", "DELETE", "/api/v1/tokens/ci", ""); code != 404 || !strings.Contains(body, `no live token \"ci\"`) {
		t.Fatalf("revoke again: %d %s", code, body)
	}
}
