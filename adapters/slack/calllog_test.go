package slack_test

import (
	"sync"
	"testing"
	"time"
)

// callLog is the Web API calls a stand-in Slack received, C being how the
// stand-in records one. Embedded in each stand-in, it gives them the same
// snapshot, count and waitFor.
type callLog[C any] struct {
	logMu sync.Mutex
	list  []C
}

// record notes one call.
func (l *callLog[C]) record(c C) {
	l.logMu.Lock()
	l.list = append(l.list, c)
	l.logMu.Unlock()
}

// snapshot is the calls so far, oldest first.
func (l *callLog[C]) snapshot() []C {
	l.logMu.Lock()
	defer l.logMu.Unlock()
	return append([]C(nil), l.list...)
}

// count is how many calls so far match.
func (l *callLog[C]) count(match func(C) bool) int {
	n := 0
	for _, c := range l.snapshot() {
		if match(c) {
			n++
		}
	}
	return n
}

// waitFor polls the calls for 20 s until match finds one, the oldest
// matching, and fails the test naming what it waited for.
func (l *callLog[C]) waitFor(t *testing.T, what string, match func(C) bool) C {
	t.Helper()
	return l.wait(t, what, match, false)
}

// waitForLatest is waitFor giving the newest matching call.
func (l *callLog[C]) waitForLatest(t *testing.T, what string, match func(C) bool) C {
	t.Helper()
	return l.wait(t, what, match, true)
}

func (l *callLog[C]) wait(t *testing.T, what string, match func(C) bool, latest bool) C {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		calls := l.snapshot()
		found := -1
		for i, c := range calls {
			if match(c) {
				found = i
				if !latest {
					break
				}
			}
		}
		if found >= 0 {
			return calls[found]
		}
	}
	t.Fatalf("no %s; calls: %+v", what, l.snapshot())
	var zero C
	return zero
}
