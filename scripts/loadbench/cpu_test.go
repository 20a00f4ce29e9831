package main

import (
	"context"
	"os"
	"slices"
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

// spun counts spin's loops, so that they are not optimized away.
var spun int

// spin keeps this process on a CPU for d.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		spun++
	}
}

func TestCPUMeterCountsThisProcesssWork(t *testing.T) {
	m := &cpuMeter{pid: os.Getpid(), rdb: bottest.Redis(t)}
	ctx := context.Background()
	// Two turns of 50 ms of CPU, with 300 ms between them that are not
	// the meter's; then the CPU per one of 20 "requests".
	for turn := range 2 {
		if err := m.resume(ctx); err != nil {
			t.Fatal(err)
		}
		spin(50 * time.Millisecond)
		m.pause(ctx)
		if turn == 0 {
			spin(300 * time.Millisecond)
		}
	}
	if m.failed {
		t.Fatal("the meter could not read this process")
	}
	per, _ := m.perRequest(20)
	// At most 5 ms each: less when the machine lends this process less
	// than all of a core; the time between the turns would make it 20.
	if per < 1000 || per > 6000 {
		t.Errorf("CPU per request = %.0f µs after two turns of 50 ms over 20; want up to about 5000", per)
	}
	if zero, _ := m.perRequest(0); zero != 0 {
		t.Errorf("CPU per none of them = %g; want 0", zero)
	}
}

func TestTurnsAlternate(t *testing.T) {
	var got []int
	for r := range 2 {
		for turn := range 3 {
			got = append(got, turnOrder(2, r, turn)...)
		}
	}
	if want := []int{0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("two sides' turns in rounds 0 and 1 = %v; want %v", got, want)
	}
	// Three sides: each takes each place once in three turns.
	for place := range 3 {
		seen := map[int]bool{}
		for turn := range 3 {
			seen[turnOrder(3, 0, turn)[place]] = true
		}
		if len(seen) != 3 {
			t.Errorf("place %d in three turns of three sides went to %v; want each side once", place, seen)
		}
	}
}

func TestMergeIngest(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	a := ingestResult{lat: []time.Duration{ms(1), ms(2)}, elapsed: time.Second}
	b := ingestResult{lat: []time.Duration{ms(3), ms(4), ms(100)}, elapsed: time.Second}
	m := mergeIngest([]ingestResult{a, b})
	if m.N != 5 || m.PerSecond != 2.5 || m.P99 != ms(100) {
		t.Errorf("merged = %d answers, %g/s, p99 %s; want 5, 2.5/s, 100ms", m.N, m.PerSecond, m.P99)
	}
}
