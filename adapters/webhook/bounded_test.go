package webhook_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/adapters/webhook"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/signing"
	"github.com/bobnet/bobnet/store/storetest"
)

// countingBody is a request body that counts the reads made of it.
type countingBody struct {
	r     io.Reader
	reads atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	return b.r.Read(p)
}

func (b *countingBody) Close() error { return nil }

// noEngine is an engine no refused delivery may reach.
type noEngine struct{ t *testing.T }

func (e noEngine) SubmitOnce(context.Context, board.Request) (board.RequestID, bool, error) {
	e.t.Error("a refused delivery reached the engine")
	return "", false, errors.New("refused")
}

// A delivery whose headers already fail (no such hook, no signature, or a
// signature header of the wrong form) is refused without a byte of its
// body being read.
func TestRefusedFromHeadersWithoutReadingTheBody(t *testing.T) {
	t.Parallel()
	hooks, err := webhook.Build(map[string]string{"github": ghSecret, "forms": stdSecret}, webhook.File{})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	webhook.New(hooks, noEngine{t}, storetest.Logger(t)).Routes(r)
	body := []byte(`{"text":"plan our daily research newspaper"}`)
	std := func(sig string) http.Header {
		h, _ := signing.StandardHeaders(stdSecret, "msg_1", time.Now(), body)
		if sig != "" {
			h.Set("webhook-signature", sig)
		}
		return h
	}
	tests := []struct {
		name   string
		hook   string
		h      http.Header
		status int
	}{
		{"unknown hook", "gitlab", http.Header{"X-Bobnet-Signature": {signing.SHA256Signature(ghSecret, body)}}, 404},
		{"no signature", "github", http.Header{"X-Bobnet-Delivery": {"d-1"}}, 401},
		{"signature not sha256=", "github", http.Header{"X-Bobnet-Signature": {"md5=0123"}}, 401},
		{"signature not hex", "github", http.Header{"X-Hub-Signature-256": {"sha256=" + strings.Repeat("zz", 32)}}, 401},
		{"signature too short", "github", http.Header{"X-Bobnet-Signature": {"sha256=abcd"}}, 401},
		{"standard without v1", "forms", std("v1a,AAAA"), 401},
		{"standard v1 not a MAC", "forms", std("v1,c2hvcnQ="), 401},
		{"standard stale", "forms", func() http.Header {
			h, _ := signing.StandardHeaders(stdSecret, "msg_1", time.Now().Add(-time.Hour), body)
			return h
		}(), 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := &countingBody{r: bytes.NewReader(body)}
			req := httptest.NewRequest(http.MethodPost, "/api/v1/hooks/"+tc.hook, b)
			req.Header = tc.h
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d (%s), want %d", rec.Code, rec.Body, tc.status)
			}
			if n := b.reads.Load(); n != 0 {
				t.Fatalf("the body was read %d times before the delivery was refused", n)
			}
		})
	}
	// A well-formed one is read (and then checked), as before.
	b := &countingBody{r: bytes.NewReader(body)}
	req := httptest.NewRequest(http.MethodPost, "/api/v1/hooks/github", b)
	req.Header.Set("X-Bobnet-Signature", signing.SHA256Signature("not-the-secret", body))
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized || b.reads.Load() == 0 {
		t.Fatalf("well-formed wrong signature: %d after %d reads, want 401 after reading", rec.Code, b.reads.Load())
	}
}

// slowSender opens a connection, sends well-formed signed headers and
// part of the body, and then stalls.
func slowSender(t *testing.T, addr string, body []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /api/v1/hooks/github HTTP/1.1\r\nHost: bobnet\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Bobnet-Signature: %s\r\n\r\n%s",
		len(body), signing.SHA256Signature(ghSecret, body), body[:len(body)/2])
	return c
}

// waitReading waits until n bodies are being read.
func waitReading(t *testing.T, a *webhook.Adapter, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for a.Reading() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d bodies being read, want %d", a.Reading(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Slow senders hold at most ReadingSlots body reads: the next delivery is
// refused at once with 503 and Retry-After, and once they are gone
// deliveries are read again.
func TestSlowSendersAreBounded(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	addr := strings.TrimPrefix(e.URL, "http://")
	body := []byte(`{"text":"plan our daily research newspaper, slowly"}`)
	conns := make([]net.Conn, webhook.ReadingSlots)
	for i := range conns {
		conns[i] = slowSender(t, addr, body)
	}
	waitReading(t, e.Adapter, webhook.ReadingSlots)

	form := fixture(t, "generic-text.json")
	deliver := func() *http.Response {
		h, _ := signing.StandardHeaders(stdSecret, "msg_after_the_slow_ones", time.Now(), form)
		req, _ := http.NewRequest(http.MethodPost, e.URL+"/api/v1/hooks/forms", bytes.NewReader(form))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := deliver()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("delivery past %d slow senders: %d, Retry-After %q; want 503 with Retry-After", webhook.ReadingSlots, resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	// One slow sender finishes its body: it is answered, its slot is
	// given back, and the next delivery is read.
	if _, err := conns[0].Write(body[len(body)/2:]); err != nil {
		t.Fatal(err)
	}
	answer, err := http.ReadResponse(bufio.NewReader(conns[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	answer.Body.Close()
	if answer.StatusCode != http.StatusAccepted {
		t.Fatalf("the slow sender that finished: %d", answer.StatusCode)
	}
	waitReading(t, e.Adapter, webhook.ReadingSlots-1)
	if resp := deliver(); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("delivery with a free slot: %d", resp.StatusCode)
	}
}
