package metrics_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/metrics"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
)

// wantFamily is what a dashboard or alert relies on in one family.
type wantFamily struct {
	typ     dto.MetricType
	labels  []string  // label names, sorted; le is not one
	buckets []float64 // a histogram's upper bounds, +Inf left out
}

// bobnetFamilies are every bobnet_* family as dashboards and alerts know
// them: the move from client_golang kept each name, type, label and bound.
var bobnetFamilies = map[string]wantFamily{
	"bobnet_requests_total":            {typ: dto.MetricType_COUNTER, labels: []string{"outcome", "source"}},
	"bobnet_proposals_total":           {typ: dto.MetricType_COUNTER, labels: []string{"outcome"}},
	"bobnet_model_tokens_total":        {typ: dto.MetricType_COUNTER, labels: []string{"source"}},
	"bobnet_runs_total":                {typ: dto.MetricType_COUNTER, labels: []string{"state"}},
	"bobnet_queue_depth":               {typ: dto.MetricType_GAUGE, labels: []string{"state"}},
	"bobnet_planner_duration_seconds":  {typ: dto.MetricType_HISTOGRAM, labels: []string{"outcome"}, buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}},
	"bobnet_approve_to_commit_seconds": {typ: dto.MetricType_HISTOGRAM, buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}},
	"bobnet_run_card_seconds":          {typ: dto.MetricType_HISTOGRAM, buckets: []float64{1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}},
}

// parse scrapes m and reads the whole exposition with Prometheus' own
// parser, so any line the library or the handler gets wrong fails here.
func parse(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type = %q", ct)
	}
	body := rec.Body.String()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return fams
}

// labels returns a series' label names and values.
func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

func TestExpositionParsesWithPrometheusParser(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.WatchQueue(fakeDepth{waiting: 3, inFlight: 1}, slog.New(slog.DiscardHandler))
	m.RequestRefused(board.SourceSlack, "rate_limited")
	m.RequestAnswered(board.SourceConsole, board.ReplyProposal)
	m.ProposalClosed(board.ProposalApproved)
	m.Committed(30 * time.Millisecond)
	m.ModelTokens(board.SourceConsole, 120)
	m.RunEnded("done")
	m.CardWorked(7 * time.Second)
	answer := planner.Outcome{Result: plan.Result{Plan: &plan.Envelope{Kind: plan.KindAnswer}}}
	_, _ = m.Planner(fakePlanner{out: answer}).Plan(context.Background(), planner.PromptInput{}, plan.Options{})

	fams := parse(t, m)
	for name, want := range bobnetFamilies {
		f, ok := fams[name]
		if !ok {
			t.Errorf("no family %s", name)
			continue
		}
		if f.GetType() != want.typ {
			t.Errorf("%s is a %v, want %v", name, f.GetType(), want.typ)
		}
		if f.GetHelp() == "" {
			t.Errorf("%s has no help text", name)
		}
		for _, s := range f.GetMetric() {
			var names []string
			for n := range labels(s) {
				names = append(names, n)
			}
			slices.Sort(names)
			if !slices.Equal(names, want.labels) {
				t.Errorf("%s has labels %v, want %v", name, names, want.labels)
			}
			if want.typ != dto.MetricType_HISTOGRAM {
				continue
			}
			var bounds []float64
			for _, b := range s.GetHistogram().GetBucket() {
				if !math.IsInf(b.GetUpperBound(), 1) {
					bounds = append(bounds, b.GetUpperBound())
				}
			}
			if !slices.Equal(bounds, want.buckets) {
				t.Errorf("%s has bounds %v, want %v", name, bounds, want.buckets)
			}
		}
	}
	for name := range fams {
		if _, ok := bobnetFamilies[name]; strings.HasPrefix(name, "bobnet_") && !ok {
			t.Errorf("unexpected family %s", name)
		}
	}

	requests := map[string]float64{}
	for _, s := range fams["bobnet_requests_total"].GetMetric() {
		l := labels(s)
		requests[l["source"]+"/"+l["outcome"]] = s.GetCounter().GetValue()
	}
	if requests["slack/rate_limited"] != 1 || requests["console/proposal"] != 1 {
		t.Errorf("requests = %v", requests)
	}
	card := fams["bobnet_run_card_seconds"].GetMetric()[0].GetHistogram()
	if card.GetSampleCount() != 1 || card.GetSampleSum() != 7 || card.GetBucket()[2].GetCumulativeCount() != 0 || card.GetBucket()[3].GetCumulativeCount() != 1 {
		t.Errorf("run card histogram = %v", card)
	}
	// The Go runtime and process series come along, typed.
	for name, typ := range map[string]dto.MetricType{
		"go_goroutines":                 dto.MetricType_GAUGE,
		"go_gc_duration_seconds":        dto.MetricType_SUMMARY,
		"process_resident_memory_bytes": dto.MetricType_GAUGE,
		"process_cpu_seconds_total":     dto.MetricType_COUNTER,
		"process_open_fds":              dto.MetricType_GAUGE,
	} {
		if f, ok := fams[name]; !ok || f.GetType() != typ {
			t.Errorf("%s missing or not a %v", name, typ)
		}
	}
}

// boundedValues are every value each label of BobNet's families may take.
var boundedValues = map[string][]string{
	"source": {"slack", "matrix", "console", "other"},
	"outcome": {"answer", "clarify", "refuse", "error", "slow_down", "proposal", "info",
		"duplicate", "rate_limited", "invalid", "unavailable",
		"created", "approved", "cancelled", "expired", "superseded",
		"propose_actions", "timeout", "unreachable", "other"},
	"state": {"done", "stopped", "timed_out", "waiting", "in_flight", "other"},
}

// TestLabelValuesAreBounded feeds every method values a caller might
// wrongly pass on (channel keys, workspace and user ids, text that would
// close the label and forge a series) and finds only the known words in
// the exposition: whatever the callers do, /metrics names no tenant and
// its series cannot grow without end.
func TestLabelValuesAreBounded(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.WatchQueue(fakeDepth{waiting: 1}, slog.New(slog.DiscardHandler))
	hostile := []string{
		"slack:TAAAA/CAAA1",
		"TAAAA/UAAA1",
		"matrix:!room:example.org",
		"console:general",
		`slack:"quoted"`,
		"new\nline",
		"bad:\xff\xfeutf8",
		"close:\"} 99\nbobnet_runs_total{state=\"forged\"} 1",
	}
	for i, h := range hostile {
		m.ModelTokens(board.Source(h), i+1)
		m.RequestRefused(board.Source(h), h)
		m.RequestAnswered(board.Source(h), board.ReplyKind(h))
		m.ProposalClosed(board.ProposalState(h))
		m.RunEnded(h)
		kind := planner.Outcome{Result: plan.Result{Plan: &plan.Envelope{Kind: plan.Kind(h)}}}
		_, _ = m.Planner(fakePlanner{out: kind}).Plan(context.Background(), planner.PromptInput{}, plan.Options{})
	}
	m.ModelTokens(board.SourceSlack, 5)
	m.RequestRefused(board.SourceMatrix, "rate_limited")

	fams := parse(t, m)
	for name, f := range fams {
		if !strings.HasPrefix(name, "bobnet_") {
			continue
		}
		for _, s := range f.GetMetric() {
			for n, v := range labels(s) {
				if !slices.Contains(boundedValues[n], v) {
					t.Errorf("%s has %s=%q, not one of %v", name, n, v, boundedValues[n])
				}
			}
		}
	}
	tokens := map[string]float64{}
	for _, s := range fams["bobnet_model_tokens_total"].GetMetric() {
		tokens[labels(s)["source"]] = s.GetCounter().GetValue()
	}
	// 1+2+…+8 from the hostile sources, 5 from slack.
	if len(tokens) != 2 || tokens["other"] != 36 || tokens["slack"] != 5 {
		t.Errorf("tokens by source = %v, want other 36 and slack 5", tokens)
	}
	for _, s := range fams["bobnet_runs_total"].GetMetric() {
		if l := labels(s); l["state"] != "other" || s.GetCounter().GetValue() != float64(len(hostile)) {
			t.Errorf("runs: %v %v", l, s.GetCounter().GetValue())
		}
	}
	requests := map[string]float64{}
	for _, s := range fams["bobnet_requests_total"].GetMetric() {
		l := labels(s)
		requests[l["source"]+"/"+l["outcome"]] = s.GetCounter().GetValue()
	}
	if requests["matrix/rate_limited"] != 1 || requests["other/other"] != float64(2*len(hostile)) {
		t.Errorf("requests = %v", requests)
	}
}

func TestFailedQueueReadStillParses(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.WatchQueue(fakeDepth{err: errors.New("redis: connection refused")}, slog.New(slog.DiscardHandler))
	fams := parse(t, m)
	if _, ok := fams["bobnet_queue_depth"]; ok {
		t.Error("a failed read reported a depth")
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("a failed queue read broke the whole scrape")
	}
}
