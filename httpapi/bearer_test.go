package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// bearerCall sends a JSON body to srv+path with token as its bearer (none
// when empty) and returns the answer's status and body. A stream that
// opens where it must not answers nothing more: the call's 10 s timeout
// fails it instead of hanging the test.
func bearerCall(t testing.TB, srv, token, method, path, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, srv+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
