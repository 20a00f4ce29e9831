//go:build !pprof

package app

import "github.com/go-chi/chi/v5"

// profiling mounts nothing: the shipped binary has no profiler (a build
// with -tags pprof serves one on the admin listener: profiling.go).
func profiling(chi.Router) {}

// pprofBuild says whether this binary was built with -tags pprof.
const pprofBuild = false
