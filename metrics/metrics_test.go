package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/metrics"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
)

// fakePlanner answers with out and err.
type fakePlanner struct {
	out planner.Outcome
	err error
}

func (f fakePlanner) Plan(context.Context, planner.PromptInput, plan.Options) (planner.Outcome, error) {
	return f.out, f.err
}

// fakeDepth reports a fixed queue depth or an error.
type fakeDepth struct {
	waiting, inFlight int64
	err               error
}

func (f fakeDepth) Depth(context.Context) (int64, int64, error) { return f.waiting, f.inFlight, f.err }

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestPlannerLatencyIsLabelledByOutcome(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	ctx := context.Background()
	answer := planner.Outcome{Result: plan.Result{Plan: &plan.Envelope{Kind: plan.KindAnswer}}}
	calls := []fakePlanner{
		{out: answer},
		{out: answer},
		{err: fmt.Errorf("plan: %w", planner.ErrTimeout)},
		{err: &planner.InvalidOutputError{}},
		{err: fmt.Errorf("plan: %w", planner.ErrUnreachable)},
	}
	for _, c := range calls {
		_, _ = m.Planner(c).Plan(ctx, planner.PromptInput{}, plan.Options{})
	}
	// A call cut short by shutdown says nothing about the model.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = m.Planner(fakePlanner{err: context.Canceled}).Plan(cancelled, planner.PromptInput{}, plan.Options{})

	out := scrape(t, m)
	for _, want := range []string{
		`bobnet_planner_duration_seconds_count{outcome="answer"} 2`,
		`bobnet_planner_duration_seconds_count{outcome="timeout"} 1`,
		`bobnet_planner_duration_seconds_count{outcome="invalid"} 1`,
		`bobnet_planner_duration_seconds_count{outcome="unreachable"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestObserverCountsRequestsAndProposals(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	var o bot.Observer = m
	o.RequestRefused(board.SourceSlack, "rate_limited")
	o.RequestAnswered(board.SourceSlack, board.ReplyProposal)
	o.RequestAnswered(board.SourceConsole, board.ReplyAnswer)
	o.ProposalClosed(board.ProposalExpired)
	o.Committed(0)
	out := scrape(t, m)
	for _, want := range []string{
		`bobnet_requests_total{outcome="rate_limited",source="slack"} 1`,
		`bobnet_requests_total{outcome="proposal",source="slack"} 1`,
		`bobnet_requests_total{outcome="answer",source="console"} 1`,
		`bobnet_proposals_total{outcome="created"} 1`,
		`bobnet_proposals_total{outcome="expired"} 1`,
		`bobnet_approve_to_commit_seconds_count 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestQueueDepthIsReadAtScrape(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.WatchQueue(fakeDepth{waiting: 7, inFlight: 2}, slog.New(slog.DiscardHandler))
	out := scrape(t, m)
	if !strings.Contains(out, `bobnet_queue_depth{state="waiting"} 7`) || !strings.Contains(out, `bobnet_queue_depth{state="in_flight"} 2`) {
		t.Errorf("queue depth missing:\n%s", out)
	}

	down := metrics.New()
	down.WatchQueue(fakeDepth{err: errors.New("redis: connection refused")}, slog.New(slog.DiscardHandler))
	out = scrape(t, down)
	if strings.Contains(out, "bobnet_queue_depth{") {
		t.Errorf("a failed read reported a depth:\n%s", out)
	}
	if !strings.Contains(out, "go_goroutines") {
		t.Error("a failed queue read broke the whole scrape")
	}
}

func TestRunSeries(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.RunEnded("done")
	m.RunEnded("done")
	m.RunEnded("stopped")
	m.CardWorked(3 * time.Second)
	out := scrape(t, m)
	for _, want := range []string{`bobnet_runs_total{state="done"} 2`, `bobnet_runs_total{state="stopped"} 1`, `bobnet_run_card_seconds_count 1`, `bobnet_run_card_seconds_bucket{le="5"} 1`} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in\n%s", want, out)
		}
	}
}
