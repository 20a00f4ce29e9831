package main

import (
	_ "embed"
	"net/http"
)

// openAPI describes every route BobNet serves; a test walks the router and
// fails when a route is missing from it.
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
