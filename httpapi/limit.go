package httpapi

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/bobnet/bobnet/httpjson"
	"github.com/bobnet/bobnet/sse"
)

// clientKey names who is calling, whatever names they put in the body:
// the same caller the event stream caps count.
func clientKey(r *http.Request) string { return sse.Caller(r) }

// clientLimits counts requests per client in fixed windows, in this
// process. Each replica counts its own: the limit is per replica, which is
// enough to keep one client from flooding the model through any of them.
type clientLimits struct {
	n   int
	per time.Duration

	mu     sync.Mutex
	window int64
	counts map[string]int
}

func newClientLimits(n int, per time.Duration) *clientLimits {
	return &clientLimits{n: n, per: per, counts: map[string]int{}}
}

// allow counts one request of key and reports whether it is within the
// limit. The whole map starts afresh each window, so it never grows past
// one window's callers.
func (l *clientLimits) allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := now.UnixNano() / int64(l.per); w != l.window {
		l.window, l.counts = w, map[string]int{}
	}
	l.counts[key]++
	return l.counts[key] <= l.n
}

// allow applies the client limit to r, answering 429 when it is spent.
func (c *Chat) allow(w http.ResponseWriter, r *http.Request) bool {
	if c.limits.allow(clientKey(r), time.Now()) {
		return true
	}
	w.Header().Set("Retry-After", "60")
	httpjson.Error(w, http.StatusTooManyRequests, fmt.Sprintf("slow down: at most %d messages a minute from one client (token or address)", c.limits.n))
	return false
}
