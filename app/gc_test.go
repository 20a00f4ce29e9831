package app

import (
	"runtime/debug"
	"testing"
)

// bobnet serve sets the collector's target unless GOGC is in its
// environment, which then stays the runtime's own.
func TestTuneGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	tuneGC(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Fatalf("GOGC unset: the collector's target is %d, want %d", got, gcPercent)
	}
	tuneGC(func(k string) (string, bool) { return "150", k == "GOGC" })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC=150 in the environment: the target was changed to %d", got)
	}
}
