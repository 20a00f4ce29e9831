package app

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestLogRequestsAnswers500OnPanic(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := logRequests(logger)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("card table on fire")
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/boom?token=secret")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", resp.StatusCode)
	}
	out := logs.String()
	for _, want := range []string{"http handler panicked", "card table on fire", "accesslog_test.go", "status=500", "path=/boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret") {
		t.Errorf("the query reached the log:\n%s", out)
	}
	// The server still answers.
	if resp, err := http.Get(srv.URL + "/again"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
}

func TestLogRequestsKeepsAbortHandlerQuiet(t *testing.T) {
	h := logRequests(slog.New(slog.DiscardHandler))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler passed on", p)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	t.Fatal("the abort did not reach net/http")
}

// TestLogRequestsStreams: a stream behind the access log can still flush
// and lift its write deadline (http.ResponseController through Unwrap),
// and the line counts its status and bytes.
func TestLogRequestsStreams(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := logRequests(logger)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Time{}); err != nil {
			t.Errorf("SetWriteDeadline: %v", err)
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("data: 1\n\n"))
		if err := rc.Flush(); err != nil {
			t.Errorf("Flush: %v", err)
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d", resp.StatusCode)
	}
	srv.Close()
	if out := logs.String(); !strings.Contains(out, "status=202") || !strings.Contains(out, "bytes=9") {
		t.Errorf("log line: %s", out)
	}
}
