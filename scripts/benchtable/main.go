// Command benchtable reads `go test -bench` output on standard input and
// prints one table: each benchmark beside its baseline from the same run
// (BenchmarkX beside BenchmarkXBaseline), with the ratio of every figure
// they share. Benchmarks without a baseline are listed on their own. `make
// bench` pipes its run through it.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// line is one benchmark result: its figures by unit.
type line struct {
	name   string
	values map[string]float64
	units  []string
}

var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(-\d+)?\s+\d+\s+(.*)$`)

func parse(r io.Reader) (map[string]line, []string) {
	out := map[string]line{}
	var order []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		l := line{name: m[1], values: map[string]float64{}}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			l.values[f[i+1]] = v
			l.units = append(l.units, f[i+1])
		}
		if _, seen := out[l.name]; !seen {
			order = append(order, l.name)
		}
		out[l.name] = l
	}
	return out, order
}

// higherIsBetter names the units where more is better.
var higherIsBetter = map[string]bool{"req/s": true, "MB/s": true}

func main() {
	results, order := parse(os.Stdin)
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
			v := l.values[u]
			if !hasBase {
				fmt.Printf("| %s | %s | %s | | |\n", name, u, format(v))
				continue
			}
			b, ok := base.values[u]
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
