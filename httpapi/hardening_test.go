package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/sse"
)

// postTo posts body to url as contentType with headers (name, value, …).
func postTo(t *testing.T, url, contentType, body string, headers ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Varying the "user" and the channel does not get past the limit: it is
// kept per client (token or address), so 150 messages under 150 names
// are not 150 requests.
func TestLimitsKeyedOnTheCallerNotOnNames(t *testing.T) {
	t.Parallel()
	eng := &fakeEngine{}
	_, srv := newServer(t, eng)
	accepted, refused := 0, 0
	for i := range 150 {
		body := fmt.Sprintf(`{"user":"user%d","text":"plan %d"}`, i, i)
		switch postTo(t, fmt.Sprintf("%s/api/v1/channels/ch%d/messages", srv.URL, i), "application/json", body).StatusCode {
		case http.StatusAccepted:
			accepted++
		case http.StatusTooManyRequests:
			refused++
		}
	}
	if accepted != httpapi.ClientRequests || refused != 150-httpapi.ClientRequests {
		t.Fatalf("accepted %d, refused %d; want %d and the rest", accepted, refused, httpapi.ClientRequests)
	}
	// Another token is another client.
	if code := postTo(t, srv.URL+"/api/v1/channels/general/messages", "application/json", `{"user":"a","text":"hi"}`, "Authorization", "Bearer other").StatusCode; code != http.StatusAccepted {
		t.Fatalf("another client: %d", code)
	}
}

// A body that is not declared JSON is refused: forms and text/plain are
// what a web page may post across sites without asking.
func TestStateChangesNeedJSONContentType(t *testing.T) {
	t.Parallel()
	eng := &fakeEngine{}
	_, srv := newServer(t, eng)
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded"} {
		if code := postTo(t, srv.URL+"/api/v1/channels/general/messages", ct, `{"user":"a","text":"hi"}`).StatusCode; code != http.StatusUnsupportedMediaType {
			t.Errorf("content type %q: %d, want 415", ct, code)
		}
	}
	if len(eng.submits) != 0 {
		t.Fatalf("submitted %d", len(eng.submits))
	}
}

// Without a token, a request from another site's page (Origin) or through
// a rebound name (Host) is refused; BobNet's own page and plain clients
// are not.
func TestGuardRefusesCrossSiteAndRebinding(t *testing.T) {
	t.Parallel()
	eng := &fakeEngine{}
	_, chat := newChat(eng)
	r := chi.NewRouter()
	r.Group(func(r chi.Router) {
		r.Use(httpapi.Guard(httpapi.GuardConfig{PublicURL: "http://127.0.0.1:8080", Listen: "127.0.0.1:8080", Tokenless: true}))
		chat.Routes(r)
	})
	send := func(method, path, host, origin string) int {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(`{"user":"a","text":"hi"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		return rec.Code
	}
	tests := []struct {
		name, method, path, host, origin string
		want                             int
	}{
		{"own page", "POST", "/api/v1/channels/general/messages", "127.0.0.1:8080", "http://127.0.0.1:8080", http.StatusAccepted},
		{"localhost", "POST", "/api/v1/channels/general/messages", "localhost:8080", "http://localhost:8080", http.StatusAccepted},
		{"curl", "POST", "/api/v1/channels/general/messages", "127.0.0.1:8080", "", http.StatusAccepted},
		{"another site", "POST", "/api/v1/channels/general/messages", "127.0.0.1:8080", "https://evil.example", http.StatusForbidden},
		{"rebound name", "POST", "/api/v1/proposals/p_okaaaaaaaaaaaaaa/approve", "evil.example:8080", "http://evil.example:8080", http.StatusForbidden},
		{"rebound stream", "GET", "/api/v1/channels/general/events", "evil.example:8080", "", http.StatusForbidden},
	}
	for _, tt := range tests {
		if got := send(tt.method, tt.path, tt.host, tt.origin); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

// Event streams are capped per client and in all.
func TestEventStreamsAreCapped(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, &fakeEngine{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := 0
	for i := range sse.DefaultPerCaller + 3 {
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/api/v1/channels/c%d/events", srv.URL, i), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			open++
		} else if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("stream %d: %d", i, resp.StatusCode)
		}
	}
	if open != sse.DefaultPerCaller {
		t.Fatalf("open streams = %d, want %d", open, sse.DefaultPerCaller)
	}
}
