package httpapi

import (
	_ "embed"
	"net/http"
)

// OpenAPI describes every route BobNet serves, the API's and the others
// (pages, health, chat platforms' callbacks); a test in systemtest walks
// the router and fails when a route is missing from it.
//
//go:embed openapi.json
var OpenAPI []byte

// serveOpenAPI answers GET /api/v1/openapi.json.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(OpenAPI)
}
