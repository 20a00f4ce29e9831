package app

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestProfilerOnlyInAPprofBuild: the admin listener serves net/http/pprof
// in a binary built with -tags pprof (make bench's profiles) and answers
// 404 for it in the shipped one (go test -tags pprof runs the first half).
func TestProfilerOnlyInAPprofBuild(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	srv := httptest.NewServer(adminHandler(ok, ok, slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer srv.Close()
	want := http.StatusNotFound
	if pprofBuild {
		want = http.StatusOK
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/allocs", "/debug/pprof/symbol"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d; want %d (pprof build: %v)", path, resp.StatusCode, want, pprofBuild)
		}
	}
	// The public routes stay off the admin listener either way.
	resp, err := http.Get(srv.URL + "/api/v1/boards")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /api/v1/boards on the admin listener = %d; want 404", resp.StatusCode)
	}
}
