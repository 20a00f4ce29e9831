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
