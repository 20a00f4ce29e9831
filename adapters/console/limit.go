package console

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// clientKey names who is calling, whatever names they put in the body:
// the bearer token (as a hash, so no token is kept in memory in the clear)
// or, without one, the address the request came from.
func clientKey(r *http.Request) string {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		tok = r.URL.Query().Get("access_token")
	}
	if tok = strings.TrimSpace(tok); tok != "" {
		sum := sha256.Sum256([]byte(tok))
		return "token:" + hex.EncodeToString(sum[:8])
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

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
func (c *Console) allow(w http.ResponseWriter, r *http.Request) bool {
	if c.limits.allow(clientKey(r), time.Now()) {
		return true
	}
	w.Header().Set("Retry-After", "60")
	writeError(w, http.StatusTooManyRequests, fmt.Sprintf("slow down: at most %d messages a minute from one client (token or address)", c.limits.n))
	return false
}

// openStream counts an event stream of client in, if there is room.
func (c *Console) openStream(client string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open >= maxStreams || c.streams[client] >= maxClientStreams {
		return false
	}
	c.open++
	c.streams[client]++
	return true
}

func (c *Console) closeStream(client string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open--
	if c.streams[client]--; c.streams[client] <= 0 {
		delete(c.streams, client)
	}
}
