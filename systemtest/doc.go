// Package systemtest holds BobNet's system tests: each starts the whole of
// BobNet as `bobnet serve` does (app.New, then App.Serve on a listener of
// its own) on a throwaway Postgres database and Redis prefix, with the
// scripted model, and drives it from outside: the REST API, Slack's and
// the hooks' signed requests, Matrix, a browser. harness_test.go's start
// is the one way they start it. Tests of one part live beside that part;
// these are for what only the assembled service shows.
//
// The package has no code outside its tests, and nothing imports it.
package systemtest
