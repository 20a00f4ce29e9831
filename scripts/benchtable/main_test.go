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
		"     134\t   7490029 ns/op\t         4.985 p50-ms\t  452642 B/op\n" +
		"BenchmarkApprove64-2   \t 112\t 10492876 ns/op\t 6.899 p50-ms\n" +
		"ok  \tgithub.com/bobnet/bobnet/cmd/bobnet\t4.195s\n"
	res, _ := parse(strings.NewReader(out))
	if got := res["Approve64"]; got.runs != 2 || len(got.values["p50-ms"]) != 2 || got.values["p50-ms"][0] != 4.985 {
		t.Fatalf("Approve64 = %+v", got)
	}
}
