package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/store/storetest"
)

// TestTokenFindsTheDatabaseOfMakeRun: beside a running `make run`, whose
// folder holds the services' addresses, `bobnet token` needs no
// DATABASE_URL; with none running it says how to give it one.
func TestTokenFindsTheDatabaseOfMakeRun(t *testing.T) {
	t.Parallel()
	if os.Getenv("DATABASE_URL") == "" {
		t.Skip("DATABASE_URL is not set")
	}
	runDir := t.TempDir()
	env := map[string]string{"BOBNET_RUN_DIR": runDir}
	var out, errb bytes.Buffer
	if code := runToken([]string{"list"}, func(k string) string { return env[k] }, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "DATABASE_URL: required") || !strings.Contains(errb.String(), "make run") {
		t.Fatalf("no make run: code %d, %q", code, errb.String())
	}
	line := "DATABASE_URL=" + storetest.NewDatabase(t) + "\nREDIS_URL=redis://127.0.0.1:1/0\n"
	if err := os.WriteFile(filepath.Join(runDir, "env"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := runToken([]string{"create", "ci", "--scopes", "read"}, func(k string) string { return env[k] }, &out, &errb); code != 0 ||
		!strings.HasPrefix(out.String(), "bobnet_") || !strings.Contains(errb.String(), "using the database of `make run`") {
		t.Fatalf("beside make run: code %d, out %q, err %q", code, out.String(), errb.String())
	}
}
