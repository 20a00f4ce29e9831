package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// percentile is the p-th percentile (0..100) of ds by nearest rank: the
// smallest value at least p% of ds are at or below. ds is not changed.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// median is the middle of xs (the mean of the two middle ones for an
// even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// goal is what a figure must reach: its ratio at most (or at least) Ratio,
// or BobNet's own value at most Abs. A zero goal asks nothing.
type goal struct {
	Ratio   float64
	AtLeast bool    // the ratio must be at least Ratio (throughput)
	Abs     float64 // BobNet's median must be at most this, in the figure's unit
}

// String says the goal as the table shows it.
func (g goal) String() string {
	switch {
	case g.Abs > 0:
		return fmt.Sprintf("≤ %g", g.Abs)
	case g.Ratio > 0 && g.AtLeast:
		return fmt.Sprintf("≥ %gx", g.Ratio)
	case g.Ratio > 0:
		return fmt.Sprintf("≤ %gx", g.Ratio)
	}
	return ""
}

// figure is one row of the table: BobNet's and the bare implementation's
// value in each round (measured back to back) and the goal.
type figure struct {
	Name, Unit string
	Bob, Bare  []float64
	Goal       goal
}

// add records one round.
func (f *figure) add(bob, bare float64) {
	f.Bob = append(f.Bob, bob)
	f.Bare = append(f.Bare, bare)
}

// ratios are each round's BobNet value over its bare one: a pair measured
// seconds apart shares the machine's load, so the ratio of a round is
// steadier than the ratio of the medians.
func (f *figure) ratios() []float64 {
	var r []float64
	for i := range min(len(f.Bob), len(f.Bare)) {
		if f.Bare[i] > 0 {
			r = append(r, f.Bob[i]/f.Bare[i])
		}
	}
	return r
}

// Met says whether the figure's medians reach its goal.
func (f *figure) Met() bool {
	g := f.Goal
	switch {
	case g.Abs > 0:
		return len(f.Bob) > 0 && median(f.Bob) <= g.Abs
	case g.Ratio > 0 && g.AtLeast:
		return len(f.ratios()) > 0 && median(f.ratios()) >= g.Ratio
	case g.Ratio > 0:
		return len(f.ratios()) > 0 && median(f.ratios()) <= g.Ratio
	}
	return true
}

// spread says a median with the range of the rounds: "5.30 (5.10–6.02)".
func spread(xs []float64, format string) string {
	if len(xs) == 0 {
		return "–"
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", median(xs), slices.Min(xs), slices.Max(xs))
}

// valueFormat is how a figure's values are printed: whole numbers for
// large ones (requests per second), two decimals otherwise.
func valueFormat(xs []float64) string {
	if len(xs) > 0 && median(xs) >= 1000 {
		return "%.0f"
	}
	return "%.2f"
}

// writeTable writes the figures as a Markdown table: each value's median
// over the rounds with its range, the median of the rounds' ratios with
// theirs, the goal and whether it is met.
func writeTable(w io.Writer, figs []*figure) error {
	return writeTableOf(w, figs, "BobNet", "bare, same run")
}

// writeTableOf is writeTable with its two columns of values named.
func writeTableOf(w io.Writer, figs []*figure, bob, bare string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| figure | %s | %s | ratio | goal | met |\n|---|---|---|---|---|---|\n", bob, bare)
	for _, f := range figs {
		met := "yes"
		if !f.Met() {
			met = "NO"
		}
		if f.Goal == (goal{}) {
			met = ""
		}
		fmt.Fprintf(&b, "| %s (%s) | %s | %s | %s | %s | %s |\n", f.Name, f.Unit,
			spread(f.Bob, valueFormat(f.Bob)), spread(f.Bare, valueFormat(f.Bare)), spread(f.ratios(), "%.2fx"), f.Goal, met)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
