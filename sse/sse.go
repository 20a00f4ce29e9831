// Package sse serves server-sent event streams. A stream outlives the
// server's write timeout (each write gets its own deadline instead), keeps quiet proxies from closing it with comments, and counts
// against a cap per caller and a cap in all, so a few callers cannot hold
// the process's memory and goroutines with streams.
package sse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bobnet/bobnet/httpjson"
)

// Limits bound the streams of one Streams and how they are kept alive.
// A zero field takes its default.
type Limits struct {
	// PerCaller is how many streams one caller (Caller) may hold open;
	// past it Open answers 429. Default 16.
	PerCaller int
	// Total is how many streams may be open in all; past it Open answers
	// 503. Default 1000.
	Total int
	// Heartbeat is how long a stream stays silent before a comment is
	// sent, so proxies keep it and a caller that went away is noticed.
	// Default 15 s.
	Heartbeat time.Duration
	// WriteWait is how long one write may block on a caller that stopped
	// reading before the stream is given up. Default 10 s.
	WriteWait time.Duration
}

// Defaults of Limits.
const (
	DefaultPerCaller = 16
	DefaultTotal     = 1000
	DefaultHeartbeat = 15 * time.Second
	DefaultWriteWait = 10 * time.Second
)

// retryMillis is how long a browser waits before it reconnects.
const retryMillis = 2000

// Streams counts the open streams of the endpoints that share it.
type Streams struct {
	limits Limits

	mu       sync.Mutex
	open     int
	byCaller map[string]int
}

// New returns an empty set of streams bounded by l.
func New(l Limits) *Streams {
	if l.PerCaller <= 0 {
		l.PerCaller = DefaultPerCaller
	}
	if l.Total <= 0 {
		l.Total = DefaultTotal
	}
	if l.Heartbeat <= 0 {
		l.Heartbeat = DefaultHeartbeat
	}
	if l.WriteWait <= 0 {
		l.WriteWait = DefaultWriteWait
	}
	return &Streams{limits: l, byCaller: map[string]int{}}
}

// Count reports how many streams are open in all.
func (s *Streams) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// Caller names who is calling, whatever names they put in the request:
// the bearer token (as a hash, so no token is kept in memory in the clear)
// or, without one, the address the request came from.
func Caller(r *http.Request) string {
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

// errFull says which cap refused a stream.
type errFull struct {
	status int
	msg    string
}

func (s *Streams) acquire(caller string) *errFull {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open >= s.limits.Total {
		return &errFull{http.StatusServiceUnavailable, fmt.Sprintf("too many event streams on this server (at most %d); try again shortly", s.limits.Total)}
	}
	if s.byCaller[caller] >= s.limits.PerCaller {
		return &errFull{http.StatusTooManyRequests, fmt.Sprintf("too many event streams: at most %d per client (token or address); close some tabs", s.limits.PerCaller)}
	}
	s.open++
	s.byCaller[caller]++
	return nil
}

func (s *Streams) release(caller string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.byCaller[caller]--; s.byCaller[caller] <= 0 {
		delete(s.byCaller, caller)
	}
}

// Stream is one open event stream. It is not safe for concurrent use: one
// handler writes it.
type Stream struct {
	s      *Streams
	w      http.ResponseWriter
	rc     *http.ResponseController
	caller string
	closed bool
}

// Open starts an event stream answering r, counted against r's caller.
// When a cap is reached or w cannot stream it answers the request itself
// (429 or 503 with Retry-After, as JSON) and returns false. The caller
// must Close the stream it got.
func (s *Streams) Open(w http.ResponseWriter, r *http.Request) (*Stream, bool) {
	caller := Caller(r)
	if full := s.acquire(caller); full != nil {
		retry := 10
		if full.status == http.StatusServiceUnavailable {
			retry = 30
		}
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		httpjson.Error(w, full.status, full.msg)
		return nil, false
	}
	st := &Stream{s: s, w: w, rc: http.NewResponseController(w), caller: caller}
	// The server's write timeout would cut the connection: a stream
	// lives past it, and every write below sets its own deadline instead.
	// (The read timeout needs nothing: net/http clears it while it waits
	// for the client to go away.)
	if err := st.rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		st.Close()
		httpjson.Error(w, http.StatusInternalServerError, "cannot stream on this connection")
		return nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := st.write("retry: " + strconv.Itoa(retryMillis) + "\n\n"); err != nil {
		st.Close()
		return nil, false
	}
	return st, true
}

// Close gives the stream's place back; closing twice is harmless.
func (st *Stream) Close() {
	if st.closed {
		return
	}
	st.closed = true
	st.s.release(st.caller)
}

// write sends text and flushes it within WriteWait.
func (st *Stream) write(text string) error {
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.s.limits.WriteWait))
	if _, err := io.WriteString(st.w, text); err != nil {
		return fmt.Errorf("sse: write: %w", err)
	}
	if err := st.rc.Flush(); err != nil {
		return fmt.Errorf("sse: flush: %w", err)
	}
	return nil
}

// Send writes one event: its id (for Last-Event-ID on reconnect), its
// name, and data as JSON on one line.
func (st *Stream) Send(id, event string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("sse: event %s %s: %w", event, id, err)
	}
	var sb strings.Builder
	if id != "" {
		sb.WriteString("id: " + oneLine(id) + "\n")
	}
	if event != "" {
		sb.WriteString("event: " + oneLine(event) + "\n")
	}
	sb.WriteString("data: ")
	sb.Write(b) // JSON has no raw newlines
	sb.WriteString("\n\n")
	return st.write(sb.String())
}

// Heartbeat writes a comment, which clients ignore.
func (st *Stream) Heartbeat() error { return st.write(": keep-alive\n\n") }

// oneLine keeps a field to its line: a newline would start another field.
func oneLine(s string) string {
	return strings.NewReplacer("\r", "", "\n", "").Replace(s)
}

// Pump writes each value events carries with send until ctx ends (the
// request ended, or the server is shutting down), events is closed
// (the subscriber fell behind: its client reconnects) or a write fails,
// with a heartbeat whenever the stream has been quiet for Heartbeat.
func Pump[T any](ctx context.Context, st *Stream, events <-chan T, send func(T) error) error {
	beat := time.NewTimer(st.s.limits.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if err := send(ev); err != nil {
				return err
			}
		case <-beat.C:
			if err := st.Heartbeat(); err != nil {
				return err
			}
		}
		beat.Reset(st.s.limits.Heartbeat)
	}
}

// Event is one event of a stream that keeps its past, such as a console
// channel's: a client that reconnects names the last id it saw
// (Last-Event-ID) and gets what followed. It goes out whole as the data
// of the event named Type.
type Event struct {
	ID   int64  `json:"id"`
	Type string `json:"type"`
	At   string `json:"at"`
	Data any    `json:"data"`
}

// Replay writes past, then what live carries, as Pump does: the loop of a
// stream that resumes from Last-Event-ID.
func Replay(ctx context.Context, st *Stream, past []Event, live <-chan Event) error {
	send := func(ev Event) error { return st.Send(strconv.FormatInt(ev.ID, 10), ev.Type, ev) }
	for _, ev := range past {
		if err := send(ev); err != nil {
			return err
		}
	}
	return Pump(ctx, st, live, send)
}
