package main

import (
	"strings"
	"testing"
)

// A multi-host DATABASE_URL whose failover settings pgx refuses, or whose
// hosts all refuse connections, stops serve and migrate with an error
// that names DATABASE_URL and what is wrong, and no password.
func TestBadMultiHostDatabaseURLIsReported(t *testing.T) {
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1/0")
	for _, c := range []struct{ url, want string }{
		{"postgres://bobnet:pw-db-9e9e@127.0.0.1:1,127.0.0.1:2/bobnet?target_session_attrs=primary-ish", "target_session_attrs"},
		{"postgres://bobnet:pw-db-9e9e@127.0.0.1:1,127.0.0.1:2/bobnet?target_session_attrs=read-write&connect_timeout=soon", "connect_timeout"},
		{"postgres://bobnet:pw-db-9e9e@127.0.0.1:1,127.0.0.1:2/bobnet?sslmode=disable&target_session_attrs=read-write", "127.0.0.1:2"},
	} {
		t.Setenv("DATABASE_URL", c.url)
		for _, cmd := range []string{"serve", "migrate"} {
			code, stdout, stderr := runCmd(t, "", cmd)
			if code != 1 || !strings.HasPrefix(stderr, "bobnet "+cmd+": DATABASE_URL: ") || !strings.Contains(stderr, c.want) {
				t.Errorf("%s with %s: exit %d, stderr %s; want DATABASE_URL and %q named", cmd, c.want, code, stderr, c.want)
			}
			assertNoSecret(t, cmd, stdout+stderr, []string{"pw-db-9e9e"})
		}
	}
}
