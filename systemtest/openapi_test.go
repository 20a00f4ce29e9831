package systemtest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/httpapi"
)

// TestOpenAPIDescribesEveryRoute walks the served router: every route and
// method must be in openapi.json, and every path there must be served.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	var spec struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI, &spec); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if spec.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q", spec.OpenAPI)
	}
	rc := newCallbackReceiver(t)
	b := newBobNet(t, hooksFile(rc.srv.URL))
	b.vars["SLACK_BOT_TOKEN"], b.vars["SLACK_SIGNING_SECRET"] = "xoxb-test", "slack-secret"
	b.boot(t)
	methods := map[string][]string{}
	err := chi.Walk(b.app.App.Handler().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.Replace(route, "/*", "/{path}", 1)
		methods[route] = append(methods[route], method)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for route, ms := range methods {
		served[route] = true
		if slices.Contains(ms, http.MethodConnect) {
			// Mounted with Handle (every method): a file server or the
			// metrics handler, described by its GET.
			ms = []string{http.MethodGet}
		}
		for _, m := range ms {
			if _, ok := spec.Paths[route][strings.ToLower(m)]; !ok {
				t.Errorf("%s %s is served but not in openapi.json", m, route)
			}
		}
	}
	for p, ops := range spec.Paths {
		if !served[p] {
			t.Errorf("openapi.json describes %s, which is not served", p)
		}
		// Without a linter at hand, its first rules still hold: each
		// operation is named and says its security, none by default.
		for m, op := range ops {
			o, _ := op.(map[string]any)
			if id, _ := o["operationId"].(string); id == "" {
				t.Errorf("%s %s has no operationId", m, p)
			}
			if _, ok := o["security"]; !ok {
				t.Errorf("%s %s does not say its security", m, p)
			}
		}
	}
	status, out := b.api(t, "", "GET", "/api/v1/openapi.json", nil)
	if status != http.StatusOK || out["openapi"] != "3.1.0" {
		t.Fatalf("GET /api/v1/openapi.json: %d", status)
	}
}
