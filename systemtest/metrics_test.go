package systemtest

import (
	"bufio"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads /metrics into series name{labels} -> value.
func (a *testApp) scrape(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := http.Get(a.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsAfterAnEndToEndRun drives requests through the REST API —
// one approved, one revised and its revision cancelled, one refused by
// the rate limit — and reads
// BobNet's own series from /metrics.
func TestMetricsAfterAnEndToEndRun(t *testing.T) {
	t.Parallel()
	a := start(t, withEnv(map[string]string{"BOBNET_USER_RATE": "3/1h"}))
	propose := func() string {
		var accepted struct {
			RequestID string `json:"request_id"`
		}
		if code := a.call(t, "POST", "/api/v1/channels/metrics/messages", map[string]string{"user": "alice", "text": "plan our daily research newspaper"}, &accepted); code != http.StatusAccepted {
			t.Fatalf("post message: %d", code)
		}
		r := a.waitRequest(t, accepted.RequestID)
		if r.ProposalID == "" {
			t.Fatalf("request = %+v", r)
		}
		return r.ProposalID
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+propose()+"/approve", map[string]string{"user": "alice"}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	var revision struct {
		RequestID string `json:"request_id"`
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+propose()+"/revise", map[string]string{"user": "alice", "feedback": "fewer cards"}, &revision); code != http.StatusAccepted {
		t.Fatalf("revise: %d", code)
	}
	v2 := a.waitRequest(t, revision.RequestID)
	if code := a.call(t, "POST", "/api/v1/proposals/"+v2.ProposalID+"/cancel", map[string]string{"user": "alice"}, nil); code != http.StatusOK {
		t.Fatalf("cancel: %d", code)
	}
	if code := a.call(t, "POST", "/api/v1/channels/metrics/messages", map[string]string{"user": "alice", "text": "and another"}, nil); code != http.StatusTooManyRequests {
		t.Fatalf("third request in the hour: %d", code)
	}

	want := map[string]float64{
		`bobnet_requests_total{outcome="proposal",source="console"}`:       3,
		`bobnet_requests_total{outcome="rate_limited",source="console"}`:   1,
		`bobnet_proposals_total{outcome="created"}`:                        3,
		`bobnet_proposals_total{outcome="superseded"}`:                     1,
		`bobnet_proposals_total{outcome="approved"}`:                       1,
		`bobnet_proposals_total{outcome="cancelled"}`:                      1,
		`bobnet_planner_duration_seconds_count{outcome="propose_actions"}`: 3,
		`bobnet_approve_to_commit_seconds_count`:                           1,
		`bobnet_queue_depth{state="waiting"}`:                              0,
		`bobnet_queue_depth{state="in_flight"}`:                            0,
	}
	// A worker acknowledges a request just after answering it, so the
	// queue may show it in flight for a moment.
	var got map[string]float64
	deadline := time.Now().Add(20 * time.Second)
	for {
		got = a.scrape(t)
		if got[`bobnet_queue_depth{state="in_flight"}`] == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for series, v := range want {
		if g, ok := got[series]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", series, g, ok, v)
		}
	}
	if got[`bobnet_approve_to_commit_seconds_sum`] <= 0 || got[`bobnet_planner_duration_seconds_sum{outcome="propose_actions"}`] <= 0 {
		t.Error("latency sums are zero")
	}
	if _, ok := got["go_goroutines"]; !ok {
		t.Error("the Go runtime series are gone")
	}
	a.checkExposition(t)
}

// checkExposition reads the whole of /metrics with Prometheus' own parser
// and checks the bobnet_* families the run produced keep their types,
// labels and bucket bounds.
func (a *testApp) checkExposition(t *testing.T) {
	t.Helper()
	resp, err := http.Get(a.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type = %q", ct)
	}
	body, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	want := map[string]struct {
		typ     dto.MetricType
		labels  []string
		buckets []float64
	}{
		"bobnet_requests_total":            {dto.MetricType_COUNTER, []string{"outcome", "source"}, nil},
		"bobnet_proposals_total":           {dto.MetricType_COUNTER, []string{"outcome"}, nil},
		"bobnet_model_tokens_total":        {dto.MetricType_COUNTER, []string{"source"}, nil},
		"bobnet_queue_depth":               {dto.MetricType_GAUGE, []string{"state"}, nil},
		"bobnet_planner_duration_seconds":  {dto.MetricType_HISTOGRAM, []string{"outcome"}, []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}},
		"bobnet_approve_to_commit_seconds": {dto.MetricType_HISTOGRAM, nil, []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}},
		"bobnet_run_card_seconds":          {dto.MetricType_HISTOGRAM, nil, []float64{1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}},
		"go_goroutines":                    {dto.MetricType_GAUGE, nil, nil},
		"process_resident_memory_bytes":    {dto.MetricType_GAUGE, nil, nil},
	}
	for name, w := range want {
		f, ok := fams[name]
		if !ok {
			t.Errorf("no family %s", name)
			continue
		}
		if f.GetType() != w.typ {
			t.Errorf("%s is a %v, want %v", name, f.GetType(), w.typ)
		}
		for _, s := range f.GetMetric() {
			var names []string
			for _, l := range s.GetLabel() {
				names = append(names, l.GetName())
			}
			slices.Sort(names)
			if !slices.Equal(names, w.labels) {
				t.Errorf("%s has labels %v, want %v", name, names, w.labels)
			}
			var bounds []float64
			for _, b := range s.GetHistogram().GetBucket() {
				if !math.IsInf(b.GetUpperBound(), 1) {
					bounds = append(bounds, b.GetUpperBound())
				}
			}
			if !slices.Equal(bounds, w.buckets) {
				t.Errorf("%s has bounds %v, want %v", name, bounds, w.buckets)
			}
		}
	}
}
