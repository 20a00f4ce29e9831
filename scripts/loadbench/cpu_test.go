package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/bobnet/bobnet/bot/bottest"
)

func TestParseProcCPU(t *testing.T) {
	// A command name with a space and a parenthesis, as the kernel writes it.
	stat := "4242 (bob net) S 1 4242 4242 0 -1 4194560 5000 0 0 0 250 75 0 0 20 0 9 0 100 1000000 2000 18446744073709551615"
	if got, err := parseStatCPU(stat); err != nil || got != 325*clockTick {
		t.Errorf("parseStatCPU = %s, %v; want 3.25s (250 + 75 ticks)", got, err)
	}
	if _, err := parseStatCPU("4242 (short) S 1"); err == nil {
		t.Error("a short stat line parsed")
	}
	if got, err := parseSchedstat("123456789 5000 42\n"); err != nil || got != 123456789 {
		t.Errorf("parseSchedstat = %s, %v; want 123456789ns", got, err)
	}
	if _, err := parseSchedstat("x 1 2"); err == nil {
		t.Error("a broken schedstat line parsed")
	}
}

func TestCPUMeterCountsThisProcesssWork(t *testing.T) {
	m := &cpuMeter{pid: os.Getpid(), rdb: bottest.Redis(t)}
	ctx := context.Background()
	m.start(ctx)
	if !m.started {
		t.Fatal("the meter did not start on this process")
	}
	// Spin 50 ms of CPU, then ask for the CPU per one of 10 "requests".
	x := 0
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	per, _ := m.perRequest(ctx, 10)
	if per < 1000 || per > 50000 { // at most 5 ms each: less when the machine lends this process less than all of a core
		t.Errorf("CPU per request = %.0f µs after spinning 50 ms over 10 (%d); want up to about 5000", per, x)
	}
	if zero, _ := m.perRequest(ctx, 0); zero != 0 {
		t.Errorf("CPU per none of them = %g; want 0", zero)
	}
}
