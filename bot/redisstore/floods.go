package redisstore

import (
	"sync"
	"time"

	"github.com/bobnet/bobnet/board"
)

// floods are the channels this replica saw refused for their rate limit
// with their notices used up, until their window ends. In such a window
// every admission of the channel is refused and nobody more is told, so
// a request whose caller answers a duplicate as it answers a refusal
// (Admission.QuietDuplicates: a Slack event) is refused here without a
// round trip: a flood in one channel costs Redis nothing past the first
// refusals of each window, on each replica.
type floods struct {
	mu    sync.Mutex
	until map[floodWindow]time.Time
}

// floodWindow is a channel's rate window: its key and the window's index
// (windowIndex). A zero one names no window (a channel without a limit).
type floodWindow struct {
	channel string
	index   int64
}

// maxFloods bounds the channels kept; past it the ended windows go.
const maxFloods = 10000

func newFloods() *floods { return &floods{until: map[floodWindow]time.Time{}} }

// floodKey is a's channel window at now (zero when the channel has no
// limit). A struct rather than a joined string: it is looked up for every
// Slack event, and builds nothing.
func floodKey(a board.Admission, now time.Time) floodWindow {
	if a.ChannelLimit.N <= 0 || a.ChannelLimit.Per <= 0 {
		return floodWindow{}
	}
	return floodWindow{channel: a.ChannelKey, index: windowIndex(now, a.ChannelLimit.Per)}
}

// windowEnd is when the fixed window of length per holding now ends.
func windowEnd(now time.Time, per time.Duration) time.Time {
	return time.UnixMilli((windowIndex(now, per) + 1) * per.Milliseconds())
}

// full says whether key's window is known refused and notified at now.
func (f *floods) full(key floodWindow, now time.Time) bool {
	if key == (floodWindow{}) {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	until, ok := f.until[key]
	return ok && now.Before(until)
}

// note keeps key refused until until.
func (f *floods) note(key floodWindow, until time.Time) {
	if key == (floodWindow{}) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.until) >= maxFloods {
		now := time.Now()
		for k, u := range f.until {
			if !now.Before(u) {
				delete(f.until, k)
			}
		}
		if len(f.until) >= maxFloods {
			clear(f.until)
		}
	}
	f.until[key] = until
}
