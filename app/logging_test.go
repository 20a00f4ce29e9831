package app

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"
)

func TestRedactURLs(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"postgres://bob:s3cret@db:5432/x", "postgres://bob:xxxxx@db:5432/x"},
		{"redis://:s3cret@r:6379/0", "redis://:xxxxx@r:6379/0"},
		{`dial "rediss://u:p%40ss@r/0": refused`, `dial "rediss://u:xxxxx@r/0": refused`},
		{"postgres://bob@db/x", "postgres://bob@db/x"},
		{"http://host/path?q=a:b@c", "http://host/path?q=a:b@c"},
		{"postgres://db/x?sslmode=disable&password=s3cret", "postgres://db/x?sslmode=disable&password=xxxxx"},
		{"two: postgres://a:one@h/x and redis://b:two@h/0", "two: postgres://a:xxxxx@h/x and redis://b:xxxxx@h/0"},
		{"no url here", "no url here"},
	}
	for _, tt := range tests {
		if got := redactURLs(tt.in); got != tt.want {
			t.Errorf("redactURLs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLoggerMasksURLPasswordsAndConfiguredSecrets(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"text", "json"} {
		cfg, err := testConfig(t, map[string]string{"BOBNET_LOG_FORMAT": format, "BOBNET_API_TOKEN": "tok-abcdef-123", "BOBNET_HOOK_SECRETS": "ci=hooksecret-1-for-logs"})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		logger := NewLogger(&buf, cfg)
		logger.Info("cannot reach postgres://u:pw-in-msg@db/x", "url", "redis://:pw-in-attr@r/0", "err", os.ErrNotExist, "header", "Bearer tok-abcdef-123")
		logger.With("hook", "ci=hooksecret-1-for-logs").WithGroup("g").Warn("w", "e", errString("dial postgres://u:pw-in-err@db/x"))
		out := buf.String()
		for _, secret := range []string{"pw-in-msg", "pw-in-attr", "pw-in-err", "tok-abcdef-123", "hooksecret-1-for-logs"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s log shows the secret %q:\n%s", format, secret, out)
			}
		}
		if !strings.Contains(out, "xxxxx") {
			t.Errorf("nothing masked:\n%s", out)
		}
		if format == "json" && !strings.HasPrefix(out, `{"time":`) {
			t.Errorf("not JSON:\n%s", out)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestLogLevelHidesLessImportantLines(t *testing.T) {
	t.Parallel()
	cfg, err := testConfig(t, map[string]string{"BOBNET_LOG_LEVEL": "warn"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	logger := NewLogger(&buf, cfg)
	logger.Info("quiet")
	logger.Warn("loud")
	if strings.Contains(buf.String(), "quiet") || !strings.Contains(buf.String(), "loud") {
		t.Fatalf("log at warn:\n%s", buf.String())
	}
	if !logger.Enabled(t.Context(), slog.LevelWarn) || logger.Enabled(t.Context(), slog.LevelInfo) {
		t.Error("levels")
	}
}
