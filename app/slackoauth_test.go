package app

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
)

func randomKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func TestConfigSlackOAuth(t *testing.T) {
	t.Parallel()
	key := randomKey()
	full := map[string]string{"SLACK_CLIENT_ID": "1.2", "SLACK_CLIENT_SECRET": "s", "SLACK_SIGNING_SECRET": "x", "BOBNET_ENCRYPTION_KEY": key}
	with := func(changes map[string]string) map[string]string {
		env := map[string]string{}
		for k, v := range full {
			env[k] = v
		}
		for k, v := range changes {
			if v == "" {
				delete(env, k)
			} else {
				env[k] = v
			}
		}
		return env
	}
	if _, err := testConfig(t, full); err != nil {
		t.Fatalf("complete OAuth settings refused: %v", err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"no client secret", with(map[string]string{"SLACK_CLIENT_SECRET": ""}), []string{"SLACK_CLIENT_SECRET"}},
		{"no client id", with(map[string]string{"SLACK_CLIENT_ID": ""}), []string{"SLACK_CLIENT_ID"}},
		{"no signing secret", with(map[string]string{"SLACK_SIGNING_SECRET": ""}), []string{"SLACK_SIGNING_SECRET"}},
		{"no key", with(map[string]string{"BOBNET_ENCRYPTION_KEY": ""}), []string{"BOBNET_ENCRYPTION_KEY", "openssl rand -base64 32"}},
		{"short key", with(map[string]string{"BOBNET_ENCRYPTION_KEY": base64.StdEncoding.EncodeToString([]byte("sixteen bytes!!!"))}), []string{"BOBNET_ENCRYPTION_KEY", "decodes to 16 bytes"}},
		{"bad old key", with(map[string]string{"BOBNET_ENCRYPTION_KEYS_OLD": key + ",nope"}), []string{"BOBNET_ENCRYPTION_KEYS_OLD", "key 2"}},
		{"bot token too", with(map[string]string{"SLACK_BOT_TOKEN": "xoxb-1"}), []string{"SLACK_BOT_TOKEN", "SLACK_CLIENT_ID"}},
		{"bot token as the app token", with(map[string]string{"SLACK_APP_TOKEN": "xoxb-1"}), []string{"SLACK_APP_TOKEN", "xapp-"}},
		{"old keys without a key", map[string]string{"BOBNET_ENCRYPTION_KEYS_OLD": key}, []string{"BOBNET_ENCRYPTION_KEY: required"}},
	}
	for _, tt := range tests {
		_, err := testConfig(t, tt.env)
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v does not say %q", tt.name, err, w)
			}
		}
		if strings.Contains(err.Error(), key) {
			t.Errorf("%s: the key is in the error", tt.name)
		}
	}
	// One bot token alone is single-workspace mode, as before.
	if c, err := testConfig(t, map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "x"}); err != nil || c.slackOAuth() {
		t.Fatalf("single workspace: %v", err)
	}
}
