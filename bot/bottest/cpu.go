package bottest

import (
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
)

// CPU measures the CPU time a benchmark's requests cost: this process's
// (the load generator's clients included, which load a benchmark and its
// baseline alike) and Redis's, from INFO cpu. On a shared machine a
// throughput ratio moves with the neighbours' load; CPU per request moves
// much less, so it says where a difference in req/s comes from.
type CPU struct {
	rdb          redis.UniversalClient
	proc, server float64
}

// StartCPU notes the CPU used so far by this process and by rdb's server.
func StartCPU(b *testing.B, rdb redis.UniversalClient) *CPU {
	b.Helper()
	c := &CPU{rdb: rdb}
	c.proc, c.server = processCPU(b), redisCPU(b, rdb)
	return c
}

// Report adds, per request (b.N), the process's CPU as cpu-µs/req and
// Redis's as redis-µs/req.
func (c *CPU) Report(b *testing.B) {
	b.Helper()
	if b.N == 0 {
		return
	}
	b.ReportMetric((processCPU(b)-c.proc)*1e6/float64(b.N), "cpu-µs/req")
	b.ReportMetric((redisCPU(b, c.rdb)-c.server)*1e6/float64(b.N), "redis-µs/req")
}

// processCPU is the user and system time this process has used, in
// seconds.
func processCPU(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// redisCPU is the user and system time the Redis server has used, in
// seconds.
func redisCPU(b *testing.B, rdb redis.UniversalClient) float64 {
	info, err := rdb.Info(b.Context(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var t float64
	for _, l := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(l, ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("redis INFO cpu %s: %v", k, err)
			}
			t += f
		}
	}
	return t
}
