package webhook_test

import (
	"strings"
	"testing"

	"github.com/bobnet/bobnet/adapters/webhook"
)

// TestNameLength: hook names and console channel names have 1 to 64
// characters.
func TestNameLength(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	for n, ok := range map[int]bool{1: true, 64: true, 65: false} {
		name := strings.Repeat("a", n)
		targeted := webhook.File{Hooks: map[string]webhook.HookConfig{name: {Target: "console:ops"}}}
		if _, err := webhook.Build(map[string]string{name: secret}, targeted); (err == nil) != ok {
			t.Errorf("hook named with %d letters: %v", n, err)
		}
		if _, err := webhook.ParseChannel("console:" + name); (err == nil) != ok {
			t.Errorf("console channel named with %d letters: %v", n, err)
		}
	}
	// Without a target, the hook's channel is console:hook-NAME.
	for n, ok := range map[int]bool{59: true, 60: false} {
		_, err := webhook.Build(map[string]string{strings.Repeat("a", n): secret}, webhook.File{})
		if (err == nil) != ok || !ok && !strings.Contains(err.Error(), "shorten the name or give the hook a target") {
			t.Errorf("hook named with %d letters and no target: %v", n, err)
		}
	}
	if _, err := webhook.Build(map[string]string{"Upper": secret}, webhook.File{}); err == nil {
		t.Error("hook named Upper accepted")
	}
}
