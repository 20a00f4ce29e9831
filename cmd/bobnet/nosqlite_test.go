package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sqlitePackages are packages that bring SQLite into the binary. BobNet
// keeps everything in Postgres and Redis; mautrix's crypto/cryptohelper
// imports the SQLite driver (through dbutil/litestream) whether or not it
// is used, which cost a few MB of idle memory, so the Matrix adapter
// builds its Olm machine without it (adapters/matrix/olm.go).
var sqlitePackages = []string{"github.com/mattn/go-sqlite3", "go.mau.fi/util/dbutil/litestream", "maunium.net/go/mautrix/crypto/cryptohelper", "modernc.org/sqlite"}

// TestBinaryLinksNoSQLite fails when the binary, as make build builds it
// (-tags goolm) and without the tag, depends on a SQLite package again.
func TestBinaryLinksNoSQLite(t *testing.T) {
	t.Parallel()
	// The module's root, wherever this test lives in it.
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		t.Fatalf("go env GOMOD: %q, %v", gomod, err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	for _, tags := range []string{"goolm", ""} {
		cmd := exec.Command("go", "list", "-deps", "-tags", tags, "./cmd/bobnet")
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -tags %q: %v: %s", tags, err, stderr.String())
		}
		deps := strings.Fields(string(out))
		if len(deps) < 100 || !containsPrefix(deps, "maunium.net/go/mautrix") {
			t.Fatalf("go list -tags %q listed %d packages, none of mautrix: not the binary's dependencies", tags, len(deps))
		}
		for _, bad := range sqlitePackages {
			if containsPrefix(deps, bad) {
				t.Errorf("bobnet built with -tags %q depends on %s", tags, bad)
			}
		}
	}
}

func containsPrefix(deps []string, prefix string) bool {
	for _, d := range deps {
		if d == prefix || strings.HasPrefix(d, prefix+"/") {
			return true
		}
	}
	return false
}
