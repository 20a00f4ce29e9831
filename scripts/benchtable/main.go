// Command benchtable reads `go test -bench` output on standard input and
// prints one table: each benchmark beside its baseline from the same run
// (BenchmarkX beside BenchmarkXBaseline), with the ratio of every figure
// they share. Benchmarks without a baseline are listed on their own. `make
// bench` pipes its run through it. A benchmark run several times is shown
// by the median of each figure, which one noisy run on a shared machine
// does not move. When a benchmark and its baseline ran the same number of
// times, in rounds (`make bench` runs every package once per round, so
// BenchmarkX and BenchmarkXBaseline run back to back), the ratio is the
// median of each round's ratio: the load other tenants put on the machine
// drifts over a minute, and a pair measured seconds apart shares it.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// line is one benchmark's results: every run's figure, by unit.
type line struct {
	name   string
	values map[string][]float64
	units  []string
	runs   int
}

// median is the middle of a unit's figures (the mean of the middle two
// when there is an even number).
func (l line) median(unit string) (float64, bool) {
	return median(l.values[unit])
}

// ratio is l's figure against base's: the median of the rounds' ratios
// when both ran the same number of rounds, else the ratio of the medians.
// lo and hi are the smallest and largest of the rounds' ratios (both the
// ratio when the rounds cannot be paired): the spread a change must beat.
func ratio(l, base line, unit string) (r, lo, hi float64, ok bool) {
	v, b := l.values[unit], base.values[unit]
	if len(v) > 0 && len(v) == len(b) {
		rs := make([]float64, 0, len(v))
		for i := range v {
			if b[i] != 0 {
				rs = append(rs, v[i]/b[i])
			}
		}
		if len(rs) == len(v) {
			m, _ := median(rs)
			return m, slices.Min(rs), slices.Max(rs), true
		}
	}
	m, ok1 := median(v)
	n, ok2 := median(b)
	if !ok1 || !ok2 || n == 0 {
		return 0, 0, 0, false
	}
	return m / n, m / n, m / n, true
}

func median(values []float64) (float64, bool) {
	v := slices.Clone(values)
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2], true
	}
	return (v[n/2-1] + v[n/2]) / 2, true
}

var (
	benchLine = regexp.MustCompile(`^Benchmark(\S+?)(-\d+)?\s+\d+\s+(.*)$`)
	// A library logging while a benchmark runs splits its line: the name,
	// the log (one line or more), and the figures on a line of their own.
	benchName = regexp.MustCompile(`^Benchmark(\S+?)(-\d+)?\s`)
	figures   = regexp.MustCompile(`^\d+\s+(\d.*)$`)
)

func parse(r io.Reader) (map[string]line, []string) {
	out := map[string]line{}
	var order []string
	sc := bufio.NewScanner(r)
	split := ""
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		m := benchLine.FindStringSubmatch(text)
		if m == nil && split != "" {
			if f := figures.FindStringSubmatch(text); f != nil {
				m = []string{text, split, "", f[1]}
			}
		}
		if m == nil {
			// More log lines may come before the figures: the split
			// name waits for them, or for the next benchmark.
			if n := benchName.FindStringSubmatch(text); n != nil {
				split = n[1]
			}
			continue
		}
		split = ""
		l, seen := out[m[1]]
		if !seen {
			l = line{name: m[1], values: map[string][]float64{}}
			order = append(order, l.name)
		}
		l.runs++
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			u := f[i+1]
			if _, ok := l.values[u]; !ok {
				l.units = append(l.units, u)
			}
			l.values[u] = append(l.values[u], v)
		}
		out[l.name] = l
	}
	return out, order
}

// higherIsBetter names the units where more is better.
var higherIsBetter = map[string]bool{"req/s": true, "MB/s": true}

func main() {
	results, order := parse(os.Stdin)
	runs := 0
	for _, l := range results {
		runs = max(runs, l.runs)
	}
	if runs > 1 {
		fmt.Printf("Each figure is the median of %d runs; each ratio is the median of the %d runs' ratios (their range in brackets), a run of a benchmark beside the run of its baseline that followed it.\n\n", runs, runs)
	}
	fmt.Println("| benchmark | figure | BobNet | baseline (same run) | ratio |")
	fmt.Println("|---|---|---|---|---|")
	for _, name := range order {
		if strings.HasSuffix(name, "Baseline") {
			continue
		}
		l := results[name]
		base, hasBase := results[name+"Baseline"]
		for _, u := range l.units {
			if u == "B/op" || u == "allocs/op" {
				continue
			}
			v, _ := l.median(u)
			if !hasBase {
				fmt.Printf("| %s | %s | %s | | |\n", name, u, format(v))
				continue
			}
			b, _ := base.median(u)
			r, lo, hi, ok := ratio(l, base, u)
			if !ok {
				fmt.Printf("| %s | %s | %s | | |\n", name, u, format(v))
				continue
			}
			note := "x"
			if higherIsBetter[u] {
				note = "x (higher is better)"
			}
			spread := ""
			if lo != hi {
				spread = fmt.Sprintf(" (%.2f–%.2f)", lo, hi)
			}
			fmt.Printf("| %s | %s | %s | %s | %.2f%s%s |\n", name, u, format(v), format(b), r, note, spread)
		}
	}
}

func format(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}
