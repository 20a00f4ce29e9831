// Package httpjson writes BobNet's JSON answers: a value with a status,
// and errors as {"error": "..."}. It is a leaf, so the API routes, the
// event streams and the token guard (which the routes import) answer
// alike without importing each other.
package httpjson

import (
	"encoding/json"
	"net/http"
)

// Write answers v as JSON with status.
func Write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Error answers {"error": msg} with status.
func Error(w http.ResponseWriter, status int, msg string) {
	Write(w, status, map[string]string{"error": msg})
}
