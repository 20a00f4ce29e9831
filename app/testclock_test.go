package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/store/storetest"
)

// TestScheduleClockReadsItsFile: under BOBNET_TEST_CLOCK the scheduler's
// now is the file's time, read afresh at every look; a file caught half
// written, or gone, leaves it where it was; without a file it is the real
// clock and looks every 30 s.
func TestScheduleClockReadsItsFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "clock")
	c := newScheduleClock(path, storetest.Logger(t))
	if c.tick() != testClockTick {
		t.Errorf("tick under a test clock: %s", c.tick())
	}
	before := time.Now()
	if got := c.Now(); got.Before(before) || time.Since(got) > time.Minute {
		t.Errorf("no file yet: %s, want the real time", got)
	}
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("2026-03-29T00:00:00Z\n")
	want := time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC)
	if got := c.Now(); !got.Equal(want) {
		t.Fatalf("Now = %s, want %s", got, want)
	}
	write("2026-03-29T01:00:00Z")
	want = want.Add(time.Hour)
	if got := c.Now(); !got.Equal(want) {
		t.Fatalf("moved: Now = %s, want %s", got, want)
	}
	for _, bad := range []string{"", "2026-03-29T0", "tomorrow"} {
		write(bad)
		if got := c.Now(); !got.Equal(want) {
			t.Errorf("file %q: Now = %s, want the last good %s", bad, got, want)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := c.Now(); !got.Equal(want) {
		t.Errorf("file gone: Now = %s, want the last good %s", got, want)
	}
	real := newScheduleClock("", storetest.Logger(t))
	if real.tick() != 30*time.Second || time.Since(real.Now()) > time.Minute {
		t.Errorf("real clock: tick %s now %s", real.tick(), real.Now())
	}
}

// TestTestClockOnlyOnLoopback: a test clock is refused where BobNet
// serves beyond the machine, token or not.
func TestTestClockOnlyOnLoopback(t *testing.T) {
	t.Parallel()
	_, err := testConfig(t, map[string]string{"BOBNET_TEST_CLOCK": "clock.txt", "BOBNET_LISTEN": "0.0.0.0:8080", "BOBNET_API_TOKEN": "a-long-enough-token-0123456789"})
	if err == nil || !strings.Contains(err.Error(), "BOBNET_TEST_CLOCK") {
		t.Errorf("beyond loopback: %v", err)
	}
	c, err := testConfig(t, map[string]string{"BOBNET_TEST_CLOCK": "clock.txt", "BOBNET_LISTEN": "127.0.0.1:8080"})
	if err != nil || c.TestClock != "clock.txt" {
		t.Errorf("loopback: %v %q", err, c.TestClock)
	}
}
