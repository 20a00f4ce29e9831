package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// TestOpenAPIDescribesEveryRoute walks the served router: every route and
// method must be in openapi.json, and every path there must be served.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	var spec struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &spec); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if spec.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q", spec.OpenAPI)
	}
	rc := newCallbackReceiver(t)
	b := newBobNet(t, hooksFile(rc.srv.URL))
	b.vars["SLACK_BOT_TOKEN"], b.vars["SLACK_SIGNING_SECRET"] = "xoxb-test", "slack-secret"
	b.boot(t)
	a := b.app
	methods := map[string][]string{}
	err := chi.Walk(a.handler.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
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

// TestOpenAPILintsClean lints openapi.json with the Redocly CLI pinned in
// scripts/openapi (its recommended rules, less the findings its ignore file
// names and explains): no error and no warning.
func TestOpenAPILintsClean(t *testing.T) {
	t.Parallel()
	bin := os.Getenv("REDOCLY")
	if bin == "" {
		t.Skip("REDOCLY is not set (make test installs the Redocly CLI with scripts/openapi/redocly.sh and sets it)")
	}
	cmd := exec.Command(bin, "lint", "--config", "../../scripts/openapi/redocly.yaml", "--format=json", "openapi.json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var report struct {
		Totals   struct{ Errors, Warnings, Ignored int }
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string
			Message  string
			Location []struct {
				Pointer string
			}
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("redocly lint (%v): %v\n%s\n%s", runErr, err, stdout.String(), stderr.String())
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		t.Errorf("%s %s at %s: %s", p.Severity, p.RuleID, where, p.Message)
	}
	if report.Totals.Errors+report.Totals.Warnings != 0 || runErr != nil {
		t.Fatalf("redocly lint: %d errors, %d warnings (%v)", report.Totals.Errors, report.Totals.Warnings, runErr)
	}
}
