// Package httpapi holds BobNet's /api/v1 routes, their guards, the
// OpenAPI document and what the routes share: strict JSON bodies (answers
// and errors are written by package httpjson).
package httpapi

// MaxBody is the most a JSON request body may hold.
const MaxBody = 64 << 10
