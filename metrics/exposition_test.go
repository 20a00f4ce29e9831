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

	"github.com/bobnet/bobnet/bot"
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
	"bobnet_model_tokens_total":        {typ: dto.MetricType_COUNTER, labels: []string{"channel"}},
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
	m.RequestRefused(bot.SourceSlack, "rate_limited")
	m.RequestAnswered(bot.SourceConsole, bot.ReplyProposal)
	m.ProposalClosed(bot.ProposalApproved)
	m.Committed(30 * time.Millisecond)
	m.ModelTokens("console:general", 120)
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

func TestChannelNamesAreEscaped(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	channels := []string{
		"console:plain",
		`slack:"quoted"`,
		`matrix:back\slash`,
		"matrix:new\nline",
		`tricky:\"`,
		`trailing:\`,
		"tab:\there",
		"bad:\xff\xfeutf8",
		"close:\"} 99\nbobnet_runs_total{state=\"forged\"} 1",
	}
	for i, c := range channels {
		m.ModelTokens(c, i+1)
	}
	fams := parse(t, m)
	got := map[string]float64{}
	for _, s := range fams["bobnet_model_tokens_total"].GetMetric() {
		got[labels(s)["channel"]] = s.GetCounter().GetValue()
	}
	for i, c := range channels {
		want := strings.ToValidUTF8(c, "\uFFFD")
		if got[want] != float64(i+1) {
			t.Errorf("channel %q: %v, want %d", want, got[want], i+1)
		}
	}
	if len(got) != len(channels) {
		t.Errorf("%d token series, want %d: %v", len(got), len(channels), got)
	}
	if _, ok := fams["bobnet_runs_total"]; ok {
		t.Error("a channel name forged a series")
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
