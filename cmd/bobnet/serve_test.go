package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

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
