// Package httpapi holds BobNet's /api/v1 routes and what they share: JSON
// answers, errors as {"error": "..."}, and strict JSON bodies. Routes move
// here from the packages that grew them one family at a time; runs came
// first.
package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// MaxBody is the most a JSON request body may hold.
const MaxBody = 64 << 10

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError answers {"error": msg} with status.
func WriteError(w http.ResponseWriter, status int, msg string) {
	WriteJSON(w, status, map[string]string{"error": msg})
}

// Decode reads a JSON body into v strictly: Content-Type JSON, at most
// MaxBody bytes, no unknown fields, exactly one value and nothing after it
// but white space (a trailing "}" is an error, not ignored). It answers
// the error itself and says whether to go on.
func Decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		WriteError(w, http.StatusUnsupportedMediaType, "send JSON with Content-Type: application/json")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		var rest json.RawMessage
		if extra := dec.Decode(&rest); !errors.Is(extra, io.EOF) {
			err = errors.New("something follows the JSON value")
		}
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d KiB", MaxBody>>10))
			return false
		}
		WriteError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return false
	}
	return true
}
