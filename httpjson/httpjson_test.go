package httpjson_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/bobnet/bobnet/httpjson"
)

func TestAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		write  func(http.ResponseWriter)
		status int
		body   string
	}{
		{"value", func(w http.ResponseWriter) { httpjson.Write(w, http.StatusCreated, map[string]int{"n": 1}) }, http.StatusCreated, `{"n":1}` + "\n"},
		{"error", func(w http.ResponseWriter) { httpjson.Error(w, http.StatusConflict, `a "run" is going`) }, http.StatusConflict, `{"error":"a \"run\" is going"}` + "\n"},
	} {
		rec := httptest.NewRecorder()
		tc.write(rec)
		if rec.Code != tc.status || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != tc.body {
			t.Errorf("%s: %d %q %q", tc.name, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
		}
	}
}
