package main

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
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
	a := startApp(t, map[string]string{"BOBNET_USER_RATE": "3/1h"})
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
}
