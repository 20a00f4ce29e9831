package main

import (
	"strings"
	"testing"
	"time"
)

func TestPercentileIsTheNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 40; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 20 * time.Millisecond}, {99, 40 * time.Millisecond}, {0, time.Millisecond}, {100, 40 * time.Millisecond}, {25, 10 * time.Millisecond}} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("percentile(1..40 ms, %g) = %s; want %s", c.p, got, c.want)
		}
	}
	if ds[0] != 40*time.Millisecond {
		t.Error("percentile sorted its argument")
	}
	// Of 20 previews the 99th percentile is the slowest.
	twenty := make([]time.Duration, 20)
	for i := range twenty {
		twenty[i] = time.Duration(i)
	}
	if got := percentile(twenty, 99); got != 19 {
		t.Errorf("p99 of 20 = %d; want the slowest, 19", got)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of nothing = %s", got)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{7}, 7}, {nil, 0}} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %g; want %g", c.xs, got, c.want)
		}
	}
}

func TestTheRatioIsTheMedianOfTheRoundsRatios(t *testing.T) {
	// Round 2 ran on a loaded machine: both sides slowed, its ratio did not.
	f := &figure{Name: "approve", Unit: "ms", Goal: goal{Ratio: 1.3}}
	f.add(6, 5)
	f.add(60, 50)
	f.add(5.5, 5)
	f.add(13, 5) // one bad round
	f.add(6.6, 5.5)
	if got := median(f.ratios()); got != 1.2 {
		t.Errorf("median ratio = %g; want 1.2 (rounds 1.2, 1.2, 1.1, 2.6, 1.2)", got)
	}
	if !f.Met() {
		t.Error("a 1.2x median does not meet ≤ 1.3x")
	}
	f.Goal = goal{Ratio: 1.1}
	if f.Met() {
		t.Error("a 1.2x median meets ≤ 1.1x")
	}
	through := &figure{Goal: goal{Ratio: 0.9, AtLeast: true}}
	through.add(850, 1000)
	through.add(950, 1000)
	through.add(880, 1000)
	if through.Met() {
		t.Error("0.88x meets ≥ 0.9x")
	}
	through.add(990, 1000)
	through.add(999, 1000)
	if !through.Met() {
		t.Error("0.95x does not meet ≥ 0.9x")
	}
	abs := &figure{Goal: goal{Abs: 50}}
	abs.add(40, 1)
	abs.add(70, 1)
	abs.add(45, 1)
	if !abs.Met() {
		t.Error("a 45 ms median does not meet ≤ 50")
	}
	if (&figure{Goal: goal{Abs: 50}}).Met() {
		t.Error("a figure with no rounds meets its goal")
	}
	// A bare round measured as zero has no ratio rather than an infinite one.
	z := &figure{}
	z.add(1, 0)
	if len(z.ratios()) != 0 {
		t.Errorf("ratios with a zero bare value = %v", z.ratios())
	}
}

func TestTableShowsMediansSpreadsRatioAndGoal(t *testing.T) {
	approve := &figure{Name: "approve p50", Unit: "ms", Goal: goal{Ratio: 1.3}}
	approve.add(5.3, 4)
	approve.add(6.1, 4.4)
	approve.add(5.5, 4.2)
	ingest := &figure{Name: "ingest", Unit: "req/s", Goal: goal{Ratio: 0.9, AtLeast: true}}
	ingest.add(14000, 18000)
	ingest.add(15000, 18000)
	ingest.add(14500, 17000)
	var b strings.Builder
	if err := writeTable(&b, []*figure{approve, ingest}); err != nil {
		t.Fatal(err)
	}
	want := "| figure | BobNet | bare, same run | ratio | goal | met |\n|---|---|---|---|---|---|\n" +
		"| approve p50 (ms) | 5.50 (5.30–6.10) | 4.20 (4.00–4.40) | 1.32x (1.31x–1.39x) | ≤ 1.3x | NO |\n" +
		"| ingest (req/s) | 14500 (14000–15000) | 18000 (17000–18000) | 0.83x (0.78x–0.85x) | ≥ 0.9x | NO |\n"
	if b.String() != want {
		t.Errorf("table =\n%s\nwant\n%s", b.String(), want)
	}
}
