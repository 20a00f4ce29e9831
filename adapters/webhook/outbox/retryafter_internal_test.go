package outbox

import (
	"testing"
	"time"
)

func TestRetryAfterReadsSecondsAndDates(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"120":                           2 * time.Minute,
		"0":                             0,
		"Tue, 24 Nov 2026 08:00:30 GMT": 30 * time.Second,
		"Tue, 24 Nov 2026 07:00:00 GMT": 0, // in the past: retry now
		"99999999":                      maxRetryAfter,
	} {
		if got, ok := retryAfter(v, now); !ok || got != want {
			t.Errorf("retryAfter(%q) = %s, %v; want %s", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "soon", "-5"} {
		if _, ok := retryAfter(v, now); ok {
			t.Errorf("retryAfter(%q) was read", v)
		}
	}
}
