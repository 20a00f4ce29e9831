package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/plan"
)

// TestEveryRouteIsClassified walks the API's router and openapi.json:
// every /api/v1 route says how it finds the channel a token limited to
// channels is checked against (httpapi.RouteReach), so a route added
// without deciding that fails here, besides being closed to limited
// tokens (TestUnclassifiedRouteIsClosed).
func TestEveryRouteIsClassified(t *testing.T) {
	t.Parallel()
	r := chi.NewRouter()
	httpapi.API{
		Chat:      httpapi.NewChat(httpapi.ChatDeps{}, discard()),
		Cards:     httpapi.NewCards(nil, nil, discard()),
		Policies:  httpapi.NewPolicies(nil, nil, discard()),
		Runs:      httpapi.NewRuns(nil, nil, plan.Runners{}, 0, ""),
		Schedules: httpapi.NewSchedules(nil, nil),
		Boards:    httpapi.NewBoards(nil, nil, discard()),
		Outputs:   httpapi.NewOutputs(nil, nil),
		Tokens:    httpapi.NewTokens(nil, discard()),
	}.Routes(r)
	served := map[string]bool{}
	err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served[method+" "+route] = true
		if httpapi.RouteReach(method, route) == "" {
			t.Errorf("%s %s is not classified in routeReach (httpapi/reach.go): say how it finds the channel it serves", method, route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(served) < 30 {
		t.Fatalf("walked %d routes", len(served))
	}
	var spec struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI, &spec); err != nil {
		t.Fatal(err)
	}
	for path, ops := range spec.Paths {
		if !strings.HasPrefix(path, "/api/v1/") || strings.HasPrefix(path, "/api/v1/hooks/") {
			continue // pages, Slack's callbacks and hooks take no API token
		}
		for method := range ops {
			m := strings.ToUpper(method)
			if httpapi.RouteReach(m, path) == "" {
				t.Errorf("openapi.json's %s %s is not classified in routeReach", m, path)
			}
			if !served[m+" "+path] {
				t.Errorf("openapi.json's %s %s is not served by httpapi.API", m, path)
			}
		}
	}
}

// limitedTokens knows one token per secret: "limited" reaches console:*
// only, "all" every channel.
type limitedTokens struct{}

func (limitedTokens) Lookup(_ context.Context, secret string) (apitoken.Token, error) {
	switch secret {
	case "limited":
		return apitoken.Token{Name: "limited", Scopes: apitoken.Scopes, Channels: []string{"console:*"}}, nil
	case "all":
		return apitoken.Token{Name: "all", Scopes: apitoken.Scopes}, nil
	}
	return apitoken.Token{}, apitoken.ErrNotFound
}

// TestUnclassifiedRouteIsClosed: a route routeReach does not know is
// answered 404 to a limited token, as an unknown route is, and served
// to every other; a classified one is served to both.
func TestUnclassifiedRouteIsClosed(t *testing.T) {
	t.Parallel()
	r := chi.NewRouter()
	r.Group(func(r chi.Router) {
		r.Use(apitoken.NewGuard(limitedTokens{}, "boot", discard()).Middleware, httpapi.LimitRoutes)
		ok := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }
		r.Get("/api/v1/brand-new/{id}", ok)
		r.Get("/api/v1/boards/{id}", ok)
	})
	for _, tc := range []struct {
		token, path string
		want        int
	}{
		{"limited", "/api/v1/brand-new/x", 404},
		{"all", "/api/v1/brand-new/x", 200},
		{"boot", "/api/v1/brand-new/x", 200},
		{"limited", "/api/v1/boards/x", 200},
	} {
		req := httptest.NewRequest("GET", tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+tc.token)
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s GET %s: %d %s, want %d", tc.token, tc.path, rec.Code, rec.Body, tc.want)
		}
		if tc.want == 404 && !strings.Contains(rec.Body.String(), "no such route") {
			t.Errorf("%s GET %s: %s, want the unknown route's answer", tc.token, tc.path, rec.Body)
		}
	}
}
