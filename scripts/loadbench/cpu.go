package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time process pid has used so far: the sum of its
// threads' time on a CPU in nanoseconds (/proc/PID/task/*/schedstat),
// or, where the kernel keeps no schedstat, user and system time in clock
// ticks (/proc/PID/stat).
func procCPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err == nil && len(tasks) > 0 {
		var total time.Duration
		ok := true
		for _, t := range tasks {
			raw, err := os.ReadFile(t)
			if err != nil {
				continue // a thread that just ended
			}
			d, err := parseSchedstat(string(raw))
			if err != nil {
				ok = false
				break
			}
			total += d
		}
		if ok {
			return total, nil
		}
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(raw))
}

// parseSchedstat reads the time on a CPU (the first field, in
// nanoseconds) from a /proc/…/schedstat line.
func parseSchedstat(line string) (time.Duration, error) {
	f := strings.Fields(line)
	if len(f) < 1 {
		return 0, fmt.Errorf("unexpected schedstat line %q", line)
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("unexpected schedstat line %q", line)
	}
	return time.Duration(ns), nil
}

// parseStatCPU reads utime and stime (fields 14 and 15) from a
// /proc/PID/stat line; the command name in parentheses may hold spaces.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc stat line %.60q", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc stat line %.60q", stat)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc stat line %.60q", stat)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// redisCPU is the CPU time the Redis server has used so far (INFO cpu),
// on a cluster the sum over every node, masters and replicas; 0 where it
// cannot tell.
func redisCPU(ctx context.Context, rdb redis.UniversalClient) time.Duration {
	switch c := rdb.(type) {
	case *redis.Client:
		return serverCPU(ctx, c)
	case *redis.ClusterClient:
		var mu sync.Mutex
		var total time.Duration
		err := c.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
			d := serverCPU(ctx, node)
			if d == 0 {
				return errors.New("a node without INFO cpu")
			}
			mu.Lock()
			total += d
			mu.Unlock()
			return nil
		})
		if err != nil {
			return 0
		}
		return total
	}
	return 0
}

// serverCPU is one Redis server's CPU time so far; 0 where it cannot tell.
func serverCPU(ctx context.Context, c *redis.Client) time.Duration {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// cpuMeter measures the CPU a server process and Redis spend over a turn.
type cpuMeter struct {
	pid       int
	rdb       redis.UniversalClient
	proc, rds time.Duration
	started   bool
}

func (m *cpuMeter) start(ctx context.Context) {
	p, err := procCPU(m.pid)
	m.proc, m.rds, m.started = p, redisCPU(ctx, m.rdb), err == nil
}

// perRequest is the CPU per request since start, of the process and of
// Redis, in microseconds; zeros where it could not tell.
func (m *cpuMeter) perRequest(ctx context.Context, n int) (proc, rds float64) {
	if !m.started || n == 0 {
		return 0, 0
	}
	p, err := procCPU(m.pid)
	if err != nil {
		return 0, 0
	}
	r := redisCPU(ctx, m.rdb)
	proc = float64(p-m.proc) / float64(time.Microsecond) / float64(n)
	if m.rds > 0 {
		rds = float64(r-m.rds) / float64(time.Microsecond) / float64(n)
	}
	return proc, rds
}

// meteredIngest is one side's turn of an ingest round: events from
// ingestRun sent to url for h.ingestTime, and the CPU the server process
// pid and Redis rdb spent per event meanwhile.
func (h *harness) meteredIngest(ctx context.Context, pid int, rdb redis.UniversalClient, url, run string, event eventFunc) (res ingestResult, cpu, rcpu float64, err error) {
	meter := &cpuMeter{pid: pid, rdb: rdb}
	meter.start(ctx)
	if res, err = ingestRun(ctx, h.client, url+"/slack/events", run, h.ingestTime, event); err != nil {
		return ingestResult{}, 0, 0, err
	}
	cpu, rcpu = meter.perRequest(ctx, res.N)
	return res, cpu, rcpu, nil
}
