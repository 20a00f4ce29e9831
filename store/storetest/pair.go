package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/migrations"
	"github.com/bobnet/bobnet/store"
)

// Pair is a Postgres primary with a synchronous streaming standby of the
// test's own, started by scripts/pgstandby.sh, for tests that fail it
// over: URL names both hosts with target_session_attrs=read-write.
type Pair struct {
	script, dir string
	URL         string
}

// NewPair starts a pair for this test, stopped and removed when it ends.
// Like the other integration tests it runs when DATABASE_URL is set (make
// test sets it, and installs the Postgres packages the script uses).
func NewPair(t testing.TB) *Pair {
	t.Helper()
	DatabaseURL(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: Postgres runs as another user when we are root and
	// must reach its folder, which t.TempDir's 0700 parent forbids.
	base, err := os.MkdirTemp("", "bobnet-pair-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &Pair{script: filepath.Join(root, "scripts", "pgstandby.sh"), dir: filepath.Join(base, "pair")}
	t.Cleanup(func() {
		_, _ = p.run("stop")
		_ = os.RemoveAll(base)
	})
	out, err := p.run("start")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "export PG_FAILOVER_URL="); ok {
			p.URL = strings.Trim(v, "'")
		}
	}
	if p.URL == "" {
		t.Fatalf("pgstandby.sh start printed %q", out)
	}
	return p
}

// StopPrimary stops the primary (fast: its sessions are cut).
func (p *Pair) StopPrimary(t testing.TB) {
	t.Helper()
	if _, err := p.run("stop-primary"); err != nil {
		t.Fatal(err)
	}
}

// Promote makes the standby the primary.
func (p *Pair) Promote(t testing.TB) {
	t.Helper()
	if _, err := p.run("promote"); err != nil {
		t.Fatal(err)
	}
}

// Store opens a store on the pair's database, migrated.
func (p *Pair) Store(t testing.TB) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.Open(ctx, p.URL, Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := migrations.Apply(ctx, s.Pool(), Logger(t)); err != nil {
		t.Fatal(err)
	}
	return s
}

func (p *Pair) run(cmd string) (string, error) {
	c := exec.Command(p.script, cmd, p.dir)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("pgstandby.sh %s: %w\n%s", cmd, err, stderr.String())
	}
	return stdout.String(), nil
}

// moduleRoot is the folder of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test")
		}
		dir = parent
	}
}
