package main

import (
	"strings"
	"testing"
)

// Three runs of a benchmark and its baseline: each figure is the median
// of its runs, beside the median of the baseline's.
func TestMedianOfRuns(t *testing.T) {
	out := `BenchmarkApprove64-2   	 300	 6000000 ns/op	 5.0 p50-ms	 1 B/op
BenchmarkApprove64Baseline-2	 300	 4000000 ns/op	 3.0 p50-ms
BenchmarkApprove64-2   	 300	 9000000 ns/op	 9.0 p50-ms	 1 B/op
BenchmarkApprove64Baseline-2	 300	 4000000 ns/op	 4.0 p50-ms
BenchmarkApprove64-2   	 300	 5000000 ns/op	 4.5 p50-ms	 1 B/op
BenchmarkApprove64Baseline-2	 300	 9000000 ns/op	 3.0 p50-ms
BenchmarkOther-2	 10	 20 ns/op
BenchmarkOther-2	 10	 40 ns/op
`
	res, order := parse(strings.NewReader(out))
	if strings.Join(order, ",") != "Approve64,Approve64Baseline,Other" {
		t.Fatalf("order = %v", order)
	}
	for _, c := range []struct {
		name, unit string
		want       float64
	}{
		{"Approve64", "p50-ms", 5.0},
		{"Approve64", "ns/op", 6000000},
		{"Approve64Baseline", "p50-ms", 3.0},
		{"Approve64Baseline", "ns/op", 4000000},
		{"Other", "ns/op", 30},
	} {
		if got, ok := res[c.name].median(c.unit); !ok || got != c.want {
			t.Errorf("median %s %s = %v, %v; want %v", c.name, c.unit, got, ok, c.want)
		}
	}
	if res["Approve64"].runs != 3 || len(res["Approve64"].units) != 3 {
		t.Errorf("Approve64 = %+v", res["Approve64"])
	}
}

// A log line written while a benchmark runs splits its result line; the
// figures on the next line still count for it.
func TestSplitLine(t *testing.T) {
	out := "BenchmarkApprove64-2   \tredis: 2026/11/23 12:39:02 pool.go:1458: conn closed\n" +
		"redis: 2026/11/23 12:39:04 pool.go:1458: another conn closed\n" +
		"     134\t   7490029 ns/op\t         4.985 p50-ms\t  452642 B/op\n" +
		"BenchmarkApprove64-2   \t 112\t 10492876 ns/op\t 6.899 p50-ms\n" +
		"ok  \tgithub.com/bobnet/bobnet/cmd/bobnet\t4.195s\n"
	res, _ := parse(strings.NewReader(out))
	if got := res["Approve64"]; got.runs != 2 || len(got.values["p50-ms"]) != 2 || got.values["p50-ms"][0] != 4.985 {
		t.Fatalf("Approve64 = %+v", got)
	}
}

// Rounds whose load drifted: two rounds' ratio is 0.8 and one's 0.75, but
// the medians of each side (900 and 1200) come from different rounds and
// would say 0.75. The ratio is the median of the rounds' ratios.
func TestRatioOfRounds(t *testing.T) {
	out := `BenchmarkIngest-2	 100	 10 ns/op	 800 req/s
BenchmarkIngestBaseline-2	 100	 10 ns/op	 1000 req/s
BenchmarkIngest-2	 100	 10 ns/op	 1200 req/s
BenchmarkIngestBaseline-2	 100	 10 ns/op	 1500 req/s
BenchmarkIngest-2	 100	 10 ns/op	 900 req/s
BenchmarkIngestBaseline-2	 100	 10 ns/op	 1200 req/s
`
	res, _ := parse(strings.NewReader(out))
	r, lo, hi, ok := ratio(res["Ingest"], res["IngestBaseline"], "req/s")
	if !ok || r != 0.8 {
		t.Fatalf("ratio = %v, %v; want the middle round's 0.8", r, ok)
	}
	if lo != 0.75 || hi != 0.8 {
		t.Fatalf("spread = %v–%v; want the rounds' 0.75–0.8", lo, hi)
	}
	// Rounds out of step (one missing) fall back to the medians.
	res["Ingest"] = line{name: "Ingest", values: map[string][]float64{"req/s": {800, 1200}}}
	if r, _, _, ok := ratio(res["Ingest"], res["IngestBaseline"], "req/s"); !ok || r != 1000.0/1200 {
		t.Fatalf("ratio of medians = %v, %v; want 1000/1200", r, ok)
	}
}
