package app

import (
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/planner"
)

func testConfig(t *testing.T, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return LoadConfig(fs, args, func(k string) string { return env[k] })
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c, err := testConfig(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8080" || c.ProposalTTL != 24*time.Hour || c.OpenAIBaseURL != "http://127.0.0.1:11434/v1" {
		t.Errorf("defaults: %+v", c)
	}
	if c.PublicURL != "http://127.0.0.1:8080" {
		t.Errorf("public URL default = %q", c.PublicURL)
	}
	if c.ModelStream != planner.StreamAuto {
		t.Errorf("model stream default = %q, want auto", c.ModelStream)
	}
	if err := c.RequireServices(true); err == nil || !strings.Contains(err.Error(), "DATABASE_URL") || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Errorf("RequireServices = %v", err)
	}
}

func TestConfigFlagsOverrideEnv(t *testing.T) {
	t.Parallel()
	c, err := testConfig(t, map[string]string{"BOBNET_PROPOSAL_TTL": "2h", "BOBNET_ADMINS": "alice, bob ,"}, "-proposal-ttl", "30m")
	if err != nil {
		t.Fatal(err)
	}
	if c.ProposalTTL != 30*time.Minute {
		t.Errorf("ttl = %s", c.ProposalTTL)
	}
	if strings.Join(c.Admins, "|") != "alice|bob" {
		t.Errorf("admins = %q", c.Admins)
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"bad ttl", map[string]string{"BOBNET_PROPOSAL_TTL": "tomorrow"}, []string{"BOBNET_PROPOSAL_TTL"}},
		{"ttl too short", map[string]string{"BOBNET_PROPOSAL_TTL": "1s"}, []string{"BOBNET_PROPOSAL_TTL"}},
		{"bad model stream", map[string]string{"BOBNET_MODEL_STREAM": "yes"}, []string{"BOBNET_MODEL_STREAM", "auto, on or off"}},
		{"bad database url", map[string]string{"DATABASE_URL": "mysql://x"}, []string{"DATABASE_URL"}},
		{"bad redis url", map[string]string{"REDIS_URL": "localhost:6379"}, []string{"REDIS_URL"}},
		{"unknown redis mode", map[string]string{"BOBNET_REDIS_MODE": "replicated"}, []string{"BOBNET_REDIS_MODE"}},
		{"sentinel url without its master", map[string]string{"BOBNET_REDIS_MODE": "sentinel", "REDIS_URL": "redis://127.0.0.1:26379?addr=127.0.0.1:26380"}, []string{"REDIS_URL", "master_name", "sentinel"}},
		{"cluster url with an unknown option", map[string]string{"BOBNET_REDIS_MODE": "cluster", "REDIS_URL": "redis://127.0.0.1:7000?addr=127.0.0.1:7001&bogus=1"}, []string{"REDIS_URL", "cluster"}},
		{"streams out of range", map[string]string{"BOBNET_REDIS_STREAMS": "0"}, []string{"BOBNET_REDIS_STREAMS"}},
		{"streams not a number", map[string]string{"BOBNET_REDIS_STREAMS": "many"}, []string{"BOBNET_REDIS_STREAMS"}},
		{"public listen without token", map[string]string{"BOBNET_LISTEN": "0.0.0.0:8080"}, []string{"BOBNET_LISTEN", "BOBNET_API_TOKEN"}},
		{"bad hook secrets", map[string]string{"BOBNET_HOOK_SECRETS": "github"}, []string{"BOBNET_HOOK_SECRETS"}},
		{"slack without bot token", map[string]string{"SLACK_SIGNING_SECRET": "s"}, []string{"SLACK_BOT_TOKEN"}},
		{"slack without secret", map[string]string{"SLACK_BOT_TOKEN": "xoxb-1"}, []string{"SLACK_SIGNING_SECRET"}},
		{"matrix half set", map[string]string{"MATRIX_HOMESERVER": "http://localhost:8008"}, []string{"MATRIX_USER_ID"}},
		{"several at once", map[string]string{"BOBNET_WORKERS": "0", "BOBNET_ANY_MEMBER_DECIDES": "maybe"}, []string{"BOBNET_WORKERS", "BOBNET_ANY_MEMBER_DECIDES"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := testConfig(t, tt.env)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}

// The Redis modes: REDIS_URL in each mode's form, and the stream shards
// each mode has unless told.
func TestConfigRedisModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env     map[string]string
		mode    redisstore.Mode
		streams int
	}{
		{map[string]string{}, redisstore.ModeSingle, 1},
		{map[string]string{"BOBNET_REDIS_MODE": "cluster", "REDIS_URL": "redis://10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000"}, redisstore.ModeCluster, 16},
		{map[string]string{"BOBNET_REDIS_MODE": "cluster", "BOBNET_REDIS_STREAMS": "6"}, redisstore.ModeCluster, 6},
		{map[string]string{"BOBNET_REDIS_MODE": "sentinel", "REDIS_URL": "redis://10.0.0.1:26379?addr=10.0.0.2:26379&master_name=bobnet&password=pw"}, redisstore.ModeSentinel, 1},
	}
	for _, tt := range tests {
		c, err := testConfig(t, tt.env)
		if err != nil {
			t.Fatalf("%v: %v", tt.env, err)
		}
		if c.RedisMode != tt.mode || c.RedisStreams != tt.streams {
			t.Errorf("%v: mode %s with %d streams; want %s with %d", tt.env, c.RedisMode, c.RedisStreams, tt.mode, tt.streams)
		}
	}
}

func TestConfigPublicListenWithToken(t *testing.T) {
	t.Parallel()
	c, err := testConfig(t, map[string]string{"BOBNET_LISTEN": "0.0.0.0:9000", "BOBNET_API_TOKEN": "t0k", "BOBNET_HOOK_SECRETS": "ci=abcdefghijklmnop,gh=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
	if err != nil {
		t.Fatal(err)
	}
	if c.HookSecrets["ci"] != "abcdefghijklmnop" || c.HookSecrets["gh"] != "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" {
		t.Errorf("hook secrets = %v", c.HookSecrets)
	}
}

// A hook secret with less than 16 bytes of key material, whsec_ with an
// empty key above all, stops BobNet at start with a message naming the
// variable and the hook, and never the secret.
func TestShortHookSecretsAreRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, hook, secret, says string
	}{
		{"whsec with an empty key", "forms", "whsec_", "0 bytes"},
		{"whsec with a 5-byte key", "forms", "whsec_c2hvcnQ=", "5 bytes"},
		{"whsec with 15 bytes", "forms", "whsec_MTIzNDU2Nzg5MDEyMzQ1", "15 bytes"},
		{"plain 6 bytes", "github", "s3cret", "6 bytes"},
		{"plain 15 bytes", "github", "fifteen-bytes-x", "15 bytes"},
		{"whsec not base64", "forms", "whsec_***", "base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := testConfig(t, map[string]string{"BOBNET_HOOK_SECRETS": "ok=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw," + tt.hook + "=" + tt.secret})
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, w := range []string{"BOBNET_HOOK_SECRETS", `"` + tt.hook + `"`, tt.says} {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %s", msg, w)
				}
			}
			if strings.Contains(msg, `"ok"`) {
				t.Errorf("error %q blames the hook with a good secret", msg)
			}
			if key := strings.TrimPrefix(tt.secret, "whsec_"); key != "" && strings.Contains(msg, key) {
				t.Errorf("error %q repeats the secret", msg)
			}
		})
	}
	// 16 bytes is enough, in either form.
	if _, err := testConfig(t, map[string]string{"BOBNET_HOOK_SECRETS": "a=sixteen-bytes-xy,b=whsec_MTIzNDU2Nzg5MDEyMzQ1Ng=="}); err != nil {
		t.Fatalf("16-byte secrets refused: %v", err)
	}
}

// A malformed connection URL is the one the password masking cannot
// find, so a URL setting's error names the variable and the problem and
// never quotes the value, however it is broken.
func TestConfigURLErrorsNeverQuoteTheValue(t *testing.T) {
	t.Parallel()
	const pw = "s3cret-pw"
	tests := []struct {
		env, value, says string
	}{
		{"DATABASE_URL", "bobnet:" + pw + "@127.0.0.1:5432/bobnet", "no scheme://"},
		{"DATABASE_URL", "postgres//bobnet:" + pw + "@127.0.0.1:5432/bobnet", "no scheme://"},
		{"DATABASE_URL", "host=db user=bobnet password=" + pw, "no scheme://"},
		{"DATABASE_URL", "mysql://bobnet:" + pw + "@db/bobnet", "scheme is not postgres or postgresql"},
		{"DATABASE_URL", "postgres://bobnet:" + pw + "@[::1/bobnet", "cannot be parsed"},
		{"DATABASE_URL", "postgres://bobnet:" + pw + "@/bobnet", "names no host"},
		{"REDIS_URL", ":" + pw + "@127.0.0.1:6379/0", "no scheme://"},
		{"BOBNET_PUBLIC_URL", "bob:" + pw + "@bobnet.example", "no scheme://"},
	}
	for _, tt := range tests {
		t.Run(tt.env+" "+tt.says, func(t *testing.T) {
			t.Parallel()
			_, err := testConfig(t, map[string]string{tt.env: tt.value})
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.Contains(msg, pw) || strings.Contains(msg, "bobnet:") || !strings.Contains(msg, tt.env+": ") || !strings.Contains(msg, tt.says) {
				t.Fatalf("error %q: want %s named with %q and no part of the value", msg, tt.env, tt.says)
			}
		})
	}
}

func TestRatesAndLogSettings(t *testing.T) {
	t.Parallel()
	c, err := testConfig(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.UserRate != (board.RateLimit{N: 20, Per: time.Minute}) || c.ChannelRate != (board.RateLimit{N: 60, Per: time.Minute}) || c.LogFormat != "text" || c.LogLevel != slog.LevelInfo {
		t.Fatalf("defaults: %+v %+v %q %v", c.UserRate, c.ChannelRate, c.LogFormat, c.LogLevel)
	}
	good := map[string]board.RateLimit{"5/10s": {N: 5, Per: 10 * time.Second}, "100/h": {N: 100, Per: time.Hour}, " 3 / 1m ": {N: 3, Per: time.Minute}}
	for in, want := range good {
		if got, err := parseRate(in); err != nil || got != want {
			t.Errorf("parseRate(%q) = %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "20", "0/1m", "-1/1m", "x/1m", "20/", "20/soon", "20/1ms", "20/48h"} {
		if _, err := parseRate(in); err == nil {
			t.Errorf("parseRate(%q) accepted", in)
		}
	}
	for env, bad := range map[string]string{"BOBNET_USER_RATE": "lots", "BOBNET_CHANNEL_RATE": "60", "BOBNET_LOG_FORMAT": "xml", "BOBNET_LOG_LEVEL": "loud"} {
		if _, err := testConfig(t, map[string]string{env: bad}); err == nil || !strings.Contains(err.Error(), env) {
			t.Errorf("%s=%s: %v", env, bad, err)
		}
	}
}

func TestConfigMatrix(t *testing.T) {
	t.Parallel()
	base := map[string]string{"MATRIX_HOMESERVER": "https://matrix.example.org", "MATRIX_USER_ID": "@bobnet:example.org", "MATRIX_PASSWORD": "pw"}
	with := func(k, v string) map[string]string {
		env := map[string]string{k: v}
		for bk, bv := range base {
			if _, ok := env[bk]; !ok {
				env[bk] = bv
			}
		}
		return env
	}
	c, err := testConfig(t, with("MATRIX_ALLOWED_SERVERS", "example.org, partner.example"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.MatrixAllowedServers, "|") != "example.org|partner.example" {
		t.Errorf("allowed servers = %q", c.MatrixAllowedServers)
	}
	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"bad user id":       {with("MATRIX_USER_ID", "bobnet"), "MATRIX_USER_ID"},
		"bad room":          {with("MATRIX_ALLOWED_ROOMS", "#general:example.org"), "MATRIX_ALLOWED_ROOMS"},
		"bad homeserver":    {with("MATRIX_HOMESERVER", "matrix.example.org"), "MATRIX_HOMESERVER"},
		"no token/password": {map[string]string{"MATRIX_HOMESERVER": "https://m.example.org", "MATRIX_USER_ID": "@b:example.org"}, "MATRIX_ACCESS_TOKEN"},
	} {
		if _, err := testConfig(t, tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming %s", name, err, tc.want)
		}
	}
}
