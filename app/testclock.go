package app

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// scheduleClock is what the run scheduler and the schedules API read as
// now: the real clock, or, for tests only (BOBNET_TEST_CLOCK), the time
// written in a file that a test moves forward, read afresh at every look.
// Leases, deadlines and everything Postgres times stay on the real clock.
type scheduleClock struct {
	path   string // "" for the real clock
	logger *slog.Logger

	mu   sync.Mutex
	last time.Time // the file's latest good reading
}

// testClockTick is how often the scheduler looks under a test clock: a
// test moves the clock an hour every few seconds.
const testClockTick = time.Second

func newScheduleClock(path string, logger *slog.Logger) *scheduleClock {
	return &scheduleClock{path: path, logger: logger}
}

// Now is the time the file says, or the real time without a file. A file
// that cannot be read or parsed leaves the clock where it was (the real
// time before any good reading), with a warning: a test rewriting it
// may be caught half way.
func (c *scheduleClock) Now() time.Time {
	if c.path == "" {
		return time.Now()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := readTestClock(c.path)
	if err != nil {
		c.logger.Warn("BOBNET_TEST_CLOCK", "err", err)
		if c.last.IsZero() {
			return time.Now()
		}
		return c.last
	}
	c.last = t
	return t
}

// tick is how often the scheduler looks for due slots.
func (c *scheduleClock) tick() time.Duration {
	if c.path != "" {
		return testClockTick
	}
	return 30 * time.Second
}

// readTestClock reads an RFC 3339 time from path.
func readTestClock(path string) (time.Time, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the test clock: %w", err)
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}, fmt.Errorf("the test clock %s holds no RFC 3339 time: %w", path, err)
	}
	return t, nil
}
