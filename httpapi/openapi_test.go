package httpapi

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
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
