package console

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRequireToken(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	tests := []struct {
		name, token, path, auth string
		want                    int
	}{
		{"no token configured", "", "/api/v1/requests/r", "", 204},
		{"missing", "s3cret", "/api/v1/requests/r", "", 401},
		{"wrong", "s3cret", "/api/v1/requests/r", "Bearer nope", 401},
		{"not bearer", "s3cret", "/api/v1/requests/r", "Basic s3cret", 401},
		{"right", "s3cret", "/api/v1/requests/r", "Bearer s3cret", 204},
		{"query on events", "s3cret", "/api/v1/channels/general/events?access_token=s3cret", "", 204},
		{"wrong query on events", "s3cret", "/api/v1/channels/general/events?access_token=x", "", 401},
		{"query elsewhere refused", "s3cret", "/api/v1/requests/r?access_token=s3cret", "", 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest("GET", tc.path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			RequireToken(tc.token)(ok).ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
			if rec.Code == 401 && rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("401 is not JSON")
			}
		})
	}
}
