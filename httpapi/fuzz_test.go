package httpapi_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// FuzzRESTBodies sends any body to the endpoints that take one: every
// answer is JSON with a status from the API's list, and nothing panics.
func FuzzRESTBodies(f *testing.F) {
	for _, seed := range []string{
		`{"user":"alice","text":"plan it"}`, `{"user":"alice","feedback":"more"}`, `{"user":""}`,
		`{"user":"alice","text":"` + strings.Repeat("x", 9000) + `"}`, `{"user":"a","extra":1}`, `{"user":"a"}{"user":"b"}`,
		`[]`, `null`, `{"user":"\u0000"}`, "",
	} {
		f.Add(seed, uint8(0))
	}
	_, chat := newChat(&fakeEngine{})
	chat.Unlimited() // the fuzzer is one client sending a lot
	r := chi.NewRouter()
	chat.Routes(r)
	paths := []string{"/api/v1/channels/general/messages", "/api/v1/proposals/p_okaaaaaaaaaaaaaa/approve", "/api/v1/proposals/p_okaaaaaaaaaaaaaa/cancel",
		"/api/v1/proposals/p_okaaaaaaaaaaaaaa/revise", "/api/v1/proposals/p_okaaaaaaaaaaaaaa/propose-again", "/api/v1/proposals/p_decidedaaaaaaaaa/approve"}
	allowed := map[int]bool{200: true, 202: true, 400: true, 403: true, 404: true, 409: true, 413: true, 415: true, 429: true, 503: true}
	f.Fuzz(func(t *testing.T, body string, which uint8) {
		req := httptest.NewRequest("POST", paths[int(which)%len(paths)], strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		if !allowed[rec.Code] {
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("answer is not JSON: %q", rec.Body.String())
		}
	})
}
