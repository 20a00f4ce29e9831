package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// TestOpenAPILintsClean lints openapi.json with the Redocly CLI pinned in
// scripts/openapi (its recommended rules, less the findings its ignore file
// names and explains): no error and no warning.
func TestOpenAPILintsClean(t *testing.T) {
	t.Parallel()
	bin := os.Getenv("REDOCLY")
	if bin == "" {
		t.Skip("REDOCLY is not set (make test installs the Redocly CLI with scripts/openapi/redocly.sh and sets it)")
	}
	cmd := exec.Command(bin, "lint", "--config", "../scripts/openapi/redocly.yaml", "--format=json", "openapi.json")
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

// TestOpenAPIQueryTokenOnStreams validates requests with kin-openapi
// against openapi.json, checking each security scheme for what it
// names: an event stream (what EventSource opens) passes with only
// ?access_token=, as with Authorization, and fails with neither; a
// route that is no stream does not take the query token.
func TestOpenAPIQueryTokenOnStreams(t *testing.T) {
	t.Parallel()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatal(err)
	}
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	present := func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
		s, req := in.SecurityScheme, in.RequestValidationInput.Request
		switch {
		case s.Type == "http" && s.Scheme == "bearer" && strings.HasPrefix(req.Header.Get("Authorization"), "Bearer "):
			return nil
		case s.Type == "apiKey" && s.In == "query" && req.URL.Query().Get(s.Name) != "":
			return nil
		}
		return fmt.Errorf("no %s", in.SecuritySchemeName)
	}
	const board = "/api/v1/boards/b_aaaaaaaaaaaaaaaaaaaaaaaaaa"
	for _, tc := range []struct {
		target, header string
		ok             bool
	}{
		{"/api/v1/channels/newsroom/events?access_token=bobnet_x", "", true},
		{board + "/events?access_token=bobnet_x", "", true},
		{"/api/v1/channels/newsroom/events", "Bearer bobnet_x", true},
		{board + "/events", "Bearer bobnet_x", true},
		{"/api/v1/channels/newsroom/events", "", false},
		{board + "/events?access_token=", "", false},
		{board + "?access_token=bobnet_x", "", false},
		{"/api/v1/tokens?access_token=bobnet_x", "", false},
		{board, "Bearer bobnet_x", true},
	} {
		req := httptest.NewRequest("GET", tc.target, nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.target, err)
		}
		err = openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route, Options: &openapi3filter.Options{AuthenticationFunc: present},
		})
		if (err == nil) != tc.ok {
			t.Errorf("GET %s (Authorization %q): %v, want valid: %v", tc.target, tc.header, err, tc.ok)
		}
	}
}
