package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/app"
)

// runCmd runs the command line as main does and returns its exit code and
// what it wrote.
func runCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// secretEnvValues sets every secret setting and both service URLs (with a
// password) in the environment, and returns the values that must never be
// printed.
func secretEnvValues(t *testing.T) []string {
	t.Helper()
	env := map[string]string{
		"DATABASE_URL":         "postgres://bobnet:pg-pass-4f1c@127.0.0.1:1/bobnet",
		"REDIS_URL":            "redis://:redis-pass-8d2e@127.0.0.1:1/0",
		"BOBNET_API_TOKEN":     "api-token-77aa",
		"OPENAI_API_KEY":       "sk-openai-5b5b",
		"SLACK_BOT_TOKEN":      "xoxb-bot-6c6c",
		"SLACK_SIGNING_SECRET": "signing-secret-9e9e",
		"SLACK_APP_TOKEN":      "xapp-app-1d1d",
		"MATRIX_ACCESS_TOKEN":  "matrix-token-2a2a",
		"MATRIX_PASSWORD":      "matrix-pass-3b3b",
		"MATRIX_PICKLE_KEY":    "matrix-pickle-6f6f",
		"BOBNET_HOOK_SECRETS":  "github=hook-secret-4c4c",
		// A valid callback secret (whsec_ and 24 bytes), so loading works.
		"BOBNET_CALLBACK_SECRET": "whsec_Y2FsbGJhY2stc2VjcmV0LTVlNWUtNWU1ZQ==",
	}
	var secrets []string
	for k, v := range env {
		t.Setenv(k, v)
		if strings.Contains(k, "URL") {
			_, v, _ = strings.Cut(v, ":"+"/"+"/")
			_, v, _ = strings.Cut(v, ":")
			v, _, _ = strings.Cut(v, "@")
		}
		if k == "BOBNET_HOOK_SECRETS" {
			_, v, _ = strings.Cut(v, "=")
		}
		secrets = append(secrets, v)
	}
	return secrets
}

func assertNoSecret(t *testing.T, what, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s shows the secret %q:\n%s", what, s, text)
		}
	}
}

func TestServeHelpShowsSecretsOnlyAsSet(t *testing.T) {
	secrets := secretEnvValues(t)
	code, stdout, stderr := runCmd(t, "", "serve", "-h")
	if code != 0 {
		t.Fatalf("serve -h exit %d, stderr %s", code, stderr)
	}
	assertNoSecret(t, "serve -h", stdout+stderr, secrets)
	for _, want := range []string{
		"-api-token string", "$BOBNET_API_TOKEN, now (set)",
		"$SLACK_SIGNING_SECRET, now (set)", "$OPENAI_API_KEY, now (set)",
		"-database-url URL", "now postgres://bobnet:xxxxx@127.0.0.1:1/bobnet",
		"-proposal-ttl duration", "default 24h",
		"-workers int", "default 4",
		"-user-rate rate", "default 20/1m",
		"-channel-rate rate", "default 60/1m",
		"-log-format format", "-any-member-decides\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("serve -h lacks %q:\n%s", want, stdout)
		}
	}
}

func TestMistypedFlagNeverShowsSecrets(t *testing.T) {
	secrets := secretEnvValues(t)
	for _, args := range [][]string{{"serve", "-nope"}, {"serve", "-api-token"}, {"migrate", "-listen"}, {"serve", "extra"}} {
		code, stdout, stderr := runCmd(t, "", args...)
		if code != 2 || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
		assertNoSecret(t, strings.Join(args, " "), stdout+stderr, secrets)
	}
}

func TestMalformedServiceURLsAreEchoedWithoutPassword(t *testing.T) {
	t.Setenv("DATABASE_URL", "mysql://bobnet:hunter2-db@db:3306/bobnet")
	t.Setenv("REDIS_URL", "localhost://:hunter2-redis@redis:6379")
	code, stdout, stderr := runCmd(t, "", "serve")
	if code != 2 {
		t.Fatalf("exit %d", code)
	}
	assertNoSecret(t, "config errors", stdout+stderr, []string{"hunter2-db", "hunter2-redis"})
	for _, want := range []string{"DATABASE_URL: its scheme is not postgres or postgresql (the value is not shown", "REDIS_URL: its scheme is not redis or rediss"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestMissingVariablesPrintTheSameBlockAsInvalidOnes(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("REDIS_URL", "")
	code, _, stderr := runCmd(t, "", "serve")
	want := "bobnet serve: invalid configuration:\n  DATABASE_URL: required (e.g. postgres://user@127.0.0.1:5432/bobnet)\n  REDIS_URL: required (e.g. redis://127.0.0.1:6379/0)\n"
	if code != 2 || stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
	t.Setenv("BOBNET_WORKERS", "lots")
	code, _, stderr = runCmd(t, "", "migrate")
	if code != 2 || !strings.HasPrefix(stderr, "bobnet migrate: invalid configuration:\n  BOBNET_WORKERS: not a whole number") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if strings.Contains(stderr, "level=") || strings.Contains(stderr, `\n`) {
		t.Errorf("a log line, not a block:\n%s", stderr)
	}
}

func TestCommandLineBasics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args       []string
		code       int
		stdout     string
		stderr     string
		stdoutNone bool
	}{
		{args: []string{"version"}, code: 0, stdout: "bobnet "},
		{args: []string{"-h"}, code: 0, stdout: "bobnet serve -h lists every setting"},
		{args: []string{"help"}, code: 0, stdout: "usage:"},
		{args: []string{"frobnicate"}, code: 2, stderr: `unknown command "frobnicate"`, stdoutNone: true},
		{args: nil, code: 2, stderr: "usage:", stdoutNone: true},
		{args: []string{"config", "nope"}, code: 2, stderr: "unknown command"},
		{args: []string{"plan", "check", "-h"}, code: 0, stderr: "--no-board"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCmd(t, "", tt.args...)
		if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) || (tt.stdoutNone && stdout != "") {
			t.Errorf("%v: exit %d\nstdout %q\nstderr %q", tt.args, code, stdout, stderr)
		}
	}
}

func TestConfigVarsListsEverySetting(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCmd(t, "", "config", "vars")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	vars := app.ConfigVars()
	if len(lines) != len(vars) {
		t.Fatalf("%d variables, %d settings", len(lines), len(vars))
	}
	secret := map[string]bool{}
	for i, v := range vars {
		name, mark, _ := strings.Cut(lines[i], " ")
		if name != v.Env {
			t.Errorf("line %d = %s, want %s", i, lines[i], v.Env)
		}
		secret[name] = mark == "secret"
	}
	for _, env := range []string{"DATABASE_URL", "REDIS_URL", "BOBNET_API_TOKEN", "OPENAI_API_KEY", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "MATRIX_ACCESS_TOKEN", "MATRIX_PASSWORD", "BOBNET_HOOK_SECRETS"} {
		if !secret[env] {
			t.Errorf("%s is not marked secret", env)
		}
	}
	for _, env := range []string{"BOBNET_LISTEN", "BOBNET_PUBLIC_URL", "OPENAI_BASE_URL", "BOBNET_MODEL"} {
		if secret[env] {
			t.Errorf("%s is marked secret", env)
		}
	}
}

func TestUnreachableServicesAreReportedWithoutPasswords(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://bobnet:pw-db-7c7c@127.0.0.1:1/bobnet?connect_timeout=5")
	t.Setenv("REDIS_URL", "redis://:pw-redis-8d8d@127.0.0.1:1/0")
	for _, cmd := range []string{"serve", "migrate"} {
		code, stdout, stderr := runCmd(t, "", cmd)
		if code != 1 || !strings.HasPrefix(stderr, "bobnet "+cmd+": DATABASE_URL: ") {
			t.Errorf("%s: exit %d, stderr %s", cmd, code, stderr)
		}
		assertNoSecret(t, cmd, stdout+stderr, []string{"pw-db-7c7c", "pw-redis-8d8d"})
	}
	// In JSON, the failure is one log record.
	t.Setenv("BOBNET_LOG_FORMAT", "json")
	code, _, stderr := runCmd(t, "", "serve")
	if code != 1 || !strings.HasPrefix(stderr, `{"time":`) || !strings.Contains(stderr, `"msg":"serve failed"`) {
		t.Errorf("json: exit %d, stderr %s", code, stderr)
	}
	assertNoSecret(t, "json", stderr, []string{"pw-db-7c7c", "pw-redis-8d8d"})
}

func TestVersionNamesTheCommitOnce(t *testing.T) {
	t.Parallel()
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "5c95e25039130000aaaa"}, {Key: "vcs.modified", Value: "true"}}
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "bobnet (devel)"},
		{"go run", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "bobnet (devel) go1.26.8"},
		{"pseudo-version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261124015631-5c95e2503913+dirty"}, Settings: rev},
			"bobnet v0.0.0-20261124015631-5c95e2503913+dirty go1.26.8"},
		{"tag without the commit", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}, Settings: rev},
			"bobnet v1.2.0 5c95e2503913+dirty go1.26.8"},
	} {
		if got := versionOf(c.info); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
