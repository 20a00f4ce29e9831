package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRequireToken(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	guarded := requireToken("s3cret")(ok)
	tests := []struct {
		name, path, header string
		want               int
	}{
		{"no token", "/api/v1/requests/r1", "", http.StatusUnauthorized},
		{"wrong token", "/api/v1/requests/r1", "Bearer nope", http.StatusUnauthorized},
		{"not bearer", "/api/v1/requests/r1", "Basic s3cret", http.StatusUnauthorized},
		{"right token", "/api/v1/requests/r1", "Bearer s3cret", http.StatusNoContent},
		{"query token on events", "/api/v1/channels/general/events?access_token=s3cret", "", http.StatusNoContent},
		{"wrong query token on events", "/api/v1/channels/general/events?access_token=x", "", http.StatusUnauthorized},
		{"query token elsewhere", "/api/v1/requests/r1?access_token=s3cret", "", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rec := httptest.NewRecorder()
			guarded.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d", rec.Code, tt.want)
			}
			if rec.Code == http.StatusUnauthorized && !strings.Contains(rec.Body.String(), `"error"`) {
				t.Errorf("body %q", rec.Body.String())
			}
		})
	}
	open := requireToken("")(ok)
	rec := httptest.NewRecorder()
	open.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/requests/r1", nil))
	if rec.Code != http.StatusNoContent {
		t.Errorf("no token configured: %d", rec.Code)
	}
}

type fakePinger struct{ err error }

func (f fakePinger) Ping(context.Context) error { return f.err }

func TestReadyHandler(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	readyHandler(map[string]pinger{"postgres": fakePinger{}, "redis": fakePinger{errors.New("connection refused")}})(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "redis") || strings.Contains(rec.Body.String(), "postgres") {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	readyHandler(map[string]pinger{"postgres": fakePinger{}})(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("%d", rec.Code)
	}
}
