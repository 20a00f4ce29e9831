// Package httpapi holds BobNet's /api/v1 routes and what they share: JSON
// answers, errors as {"error": "..."}, and strict JSON bodies. Routes move
// here from the packages that grew them one family at a time; runs came
// first.
package httpapi

import (
	"encoding/json"
	"net/http"
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
