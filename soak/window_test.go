package soak

import (
	"testing"
	"time"
)

// The figures of the failover soak: refusals counted between two faults,
// the longest run of them measured to the first attempt taken after it,
// a run with none taken after it open, the slowest answer kept.
func TestRefusalWindows(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	attempts := []attempt{
		{kind: "request", at: at(0.5), refused: true}, // before the fault
		{kind: "request", at: at(1), took: time.Second},
		{kind: "request", at: at(2), refused: true},
		{kind: "approval", at: at(2.5), refused: true}, // another kind
		{kind: "request", at: at(3), refused: true},
		{kind: "request", at: at(5.5), took: 3 * time.Second},
		{kind: "request", at: at(6), refused: true},
		{kind: "request", at: at(6.5)},
		{kind: "request", at: at(7), refused: true},
		{kind: "request", at: at(10)}, // after the next fault
	}
	w := refusalWindows(attempts, "request", at(1), at(9))
	if w.attempts != 7 || w.refused != 4 || w.longest != 3500*time.Millisecond || !w.open || w.slowest != 3*time.Second {
		t.Errorf("window = %+v", w)
	}
	if w := refusalWindows(attempts, "request", at(1), at(6.8)); w.open || w.longest != 3500*time.Millisecond {
		t.Errorf("closed window = %+v", w)
	}
	if w := refusalWindows(attempts, "approval", at(1), at(9)); w.attempts != 1 || w.refused != 1 || !w.open {
		t.Errorf("approvals = %+v", w)
	}
	// Lanes: a channel refused while another is taken is measured to
	// its own next attempt taken; one with no attempt after its refusals
	// to its last refused one.
	lanes := []attempt{
		{kind: "request", lane: "a", at: at(1), refused: true},
		{kind: "request", lane: "b", at: at(1.5)},
		{kind: "request", lane: "a", at: at(2), refused: true},
		{kind: "request", lane: "b", at: at(3)},
		{kind: "request", lane: "c", at: at(3.5), refused: true},
		{kind: "request", lane: "a", at: at(6)},
		{kind: "request", lane: "c", at: at(7.5), refused: true},
		{kind: "request", lane: "b", at: at(9)},
	}
	if w := refusalWindows(lanes, "request", at(0), at(10)); w.open || w.refused != 4 || w.longest != 5*time.Second {
		t.Errorf("lanes = %+v", w)
	}
	if w := refusalWindows(lanes, "request", at(0), at(5)); !w.open || w.longest != time.Second {
		t.Errorf("lanes cut at the fault = %+v", w)
	}
}
