//go:build pprof

package app

import (
	"net/http/pprof"

	"github.com/go-chi/chi/v5"
)

// profiling mounts net/http/pprof under /debug/pprof/ on the admin
// listener (BOBNET_ADMIN_LISTEN). Only a binary built with -tags pprof
// has it (make bench's profiles: scripts/loadbench -pprof); the shipped
// one links no profiler, so the runtime does not sample its heap (see
// accesslog.go).
func profiling(r chi.Router) {
	r.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	r.HandleFunc("/debug/pprof/profile", pprof.Profile)
	r.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	r.HandleFunc("/debug/pprof/trace", pprof.Trace)
	r.HandleFunc("/debug/pprof/*", pprof.Index) // the index, and a named profile (allocs, heap, goroutine…)
}

// pprofBuild says whether this binary was built with -tags pprof.
const pprofBuild = true
