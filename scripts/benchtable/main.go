// Command benchtable reads `go test -bench` output on standard input and
// prints one table: each benchmark beside its baseline from the same run
// (BenchmarkX beside BenchmarkXBaseline), with the ratio of every figure
// they share. Benchmarks without a baseline are listed on their own. `make
// bench` pipes its run through it. A benchmark run several times (-count)
// is shown by the median of each figure, which one noisy run on a shared
// machine does not move.
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
	v := slices.Clone(l.values[unit])
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
	// the log, and the figures on a line of their own.
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
		split = ""
		if m == nil {
			if n := benchName.FindStringSubmatch(text); n != nil {
				split = n[1]
			}
			continue
		}
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
		fmt.Printf("Each figure is the median of %d runs.\n\n", runs)
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
			b, ok := base.median(u)
			if !ok || b == 0 {
				fmt.Printf("| %s | %s | %s | | |\n", name, u, format(v))
				continue
			}
			ratio := v / b
			note := "x"
			if higherIsBetter[u] {
				note = "x (higher is better)"
			}
			fmt.Printf("| %s | %s | %s | %s | %.2f%s |\n", name, u, format(v), format(b), ratio, note)
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
