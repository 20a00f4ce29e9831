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

// cpuMeter measures the CPU a server process and Redis spend over the
// turns it is resumed for.
type cpuMeter struct {
	pid       int
	rdb       redis.UniversalClient
	proc, rds time.Duration // spent in the turns so far
	// at the current turn's start
	proc0, rds0 time.Duration
	failed      bool // a reading failed: nothing to tell
}

// resume starts a turn.
func (m *cpuMeter) resume(ctx context.Context) error {
	p, err := procCPU(m.pid)
	if err != nil {
		m.failed = true
	}
	m.proc0, m.rds0 = p, redisCPU(ctx, m.rdb)
	return ctx.Err()
}

// pause ends a turn.
func (m *cpuMeter) pause(ctx context.Context) {
	p, err := procCPU(m.pid)
	r := redisCPU(ctx, m.rdb)
	if err != nil || m.failed {
		m.failed = true
		return
	}
	m.proc += p - m.proc0
	if r == 0 || m.rds0 == 0 {
		m.rds = -1 // Redis cannot tell
	} else if m.rds >= 0 {
		m.rds += r - m.rds0
	}
}

// perRequest is the CPU per request over the turns, of the process and
// of Redis, in microseconds; zeros where it could not tell.
func (m *cpuMeter) perRequest(n int) (proc, rds float64) {
	if m.failed || n == 0 {
		return 0, 0
	}
	proc = float64(m.proc) / float64(time.Microsecond) / float64(n)
	if m.rds > 0 {
		rds = float64(m.rds) / float64(time.Microsecond) / float64(n)
	}
	return proc, rds
}

// ingestSlices is how many turns each side of an ingest round takes, in
// turn with the others: a shared machine's slow seconds come and go,
// and short turns spread them over every side instead of one.
const ingestSlices = 3

// turnOrder is the order n sides take turn t of round r in: the sides
// rotated by r+t, so that each takes each place in turn (two sides: A B,
// B A, A B in round 0; B A, A B, B A in round 1).
func turnOrder(n, r, t int) []int {
	order := make([]int, n)
	for j := range order {
		order[j] = (r + t + j) % n
	}
	return order
}

// ingestSide is a server an ingest round sends events to: its process
// and the Redis it uses, metered while it takes its turns.
type ingestSide struct {
	pid int
	rdb redis.UniversalClient
	url string
}

// ingestRound is round r of an ingest workload: each side receives
// events for h.ingestTime in all, in ingestSlices turns, in turnOrder.
// Each side's answer rate, p99 and CPU per
// event (its process's and its Redis's) are over all of its turns.
func (h *harness) ingestRound(ctx context.Context, sides []ingestSide, r int, run string, event eventFunc) (res []ingestResult, cpu, rcpu []float64, err error) {
	n := len(sides)
	turns := make([][]ingestResult, n)
	meters := make([]cpuMeter, n)
	for i, s := range sides {
		meters[i] = cpuMeter{pid: s.pid, rdb: s.rdb}
	}
	for t := range ingestSlices {
		for _, i := range turnOrder(n, r, t) {
			if err := meters[i].resume(ctx); err != nil {
				return nil, nil, nil, err
			}
			res, err := ingestRun(ctx, h.client, sides[i].url+"/slack/events", fmt.Sprint(run, "s", i, "t", t), h.ingestTime/ingestSlices, event)
			if err != nil {
				return nil, nil, nil, err
			}
			meters[i].pause(ctx)
			turns[i] = append(turns[i], res)
		}
	}
	res, cpu, rcpu = make([]ingestResult, n), make([]float64, n), make([]float64, n)
	for i := range sides {
		res[i] = mergeIngest(turns[i])
		cpu[i], rcpu[i] = meters[i].perRequest(res[i].N)
	}
	return res, cpu, rcpu, nil
}
