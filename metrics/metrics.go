// Package metrics is BobNet's own Prometheus series: requests by source
// and outcome, queue depth, planner latency, proposals by outcome and the
// time from an approval to its board being committed. A *Metrics is the
// engine's bot.Observer and wraps its planner; the HTTP handler serves
// these with the Go runtime's series.
package metrics

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
)

// Metrics holds BobNet's series in a registry of its own.
type Metrics struct {
	registry   *prometheus.Registry
	requests   *prometheus.CounterVec
	proposals  *prometheus.CounterVec
	planning   *prometheus.HistogramVec
	commit     prometheus.Histogram
	tokens     *prometheus.CounterVec
	runs       *prometheus.CounterVec
	runCards   prometheus.Histogram
	scrapeWait time.Duration
}

// New returns the series, registered with the Go runtime and process
// collectors.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bobnet_requests_total",
			Help: "Requests by source and outcome: the reply kind once answered (answer, clarify, refuse, proposal, error), or why one was never queued (duplicate, rate_limited, invalid, unavailable).",
		}, []string{"source", "outcome"}),
		proposals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bobnet_proposals_total",
			Help: "Proposals by outcome: created, approved, cancelled, expired, superseded.",
		}, []string{"outcome"}),
		planning: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bobnet_planner_duration_seconds",
			Help:    "Time one planning call took (model calls and the repair retry included), by outcome: the plan's kind, or invalid, timeout, unreachable.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300},
		}, []string{"outcome"}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "bobnet_approve_to_commit_seconds",
			Help:    "Time from an approval arriving to its board being committed in Postgres.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bobnet_model_tokens_total",
			Help: "Model tokens spent, by channel (<source>:<id>): the server's usage, or an estimate of four characters a token when it sends none.",
		}, []string{"channel"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bobnet_runs_total",
			Help: "Runs of boards by how they ended: done, stopped, timed_out.",
		}, []string{"state"}),
		runCards: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "bobnet_run_card_seconds",
			Help:    "Time a runner took to work one card of a run (the model's call included).",
			Buckets: []float64{1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600},
		}),
		scrapeWait: 2 * time.Second,
	}
	m.registry.MustRegister(m.requests, m.proposals, m.planning, m.commit, m.tokens, m.runs, m.runCards,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// RunEnded counts a run that ended, by its state.
func (m *Metrics) RunEnded(state string) { m.runs.WithLabelValues(state).Inc() }

// CardWorked records how long a runner took over one card.
func (m *Metrics) CardWorked(d time.Duration) { m.runCards.Observe(d.Seconds()) }

// Handler serves the series in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// RequestRefused counts a request that was not queued.
func (m *Metrics) RequestRefused(src bot.Source, outcome string) {
	m.requests.WithLabelValues(string(src), outcome).Inc()
}

// RequestAnswered counts a request by the kind of its answer, and a
// proposal created when that answer was one.
func (m *Metrics) RequestAnswered(src bot.Source, kind bot.ReplyKind) {
	m.requests.WithLabelValues(string(src), string(kind)).Inc()
	if kind == bot.ReplyProposal {
		m.proposals.WithLabelValues("created").Inc()
	}
}

// ProposalClosed counts a proposal leaving pending.
func (m *Metrics) ProposalClosed(state bot.ProposalState) {
	m.proposals.WithLabelValues(string(state)).Inc()
}

// Committed records how long an approval took to commit its board.
func (m *Metrics) Committed(d time.Duration) {
	m.commit.Observe(d.Seconds())
}

// ModelTokens counts the model tokens a channel spent.
func (m *Metrics) ModelTokens(channel string, n int) {
	m.tokens.WithLabelValues(channel).Add(float64(n))
}

// Planner returns next timed: every Plan call is recorded in
// bobnet_planner_duration_seconds.
func (m *Metrics) Planner(next bot.Planner) bot.Planner {
	return timedPlanner{next: next, m: m}
}

type timedPlanner struct {
	next bot.Planner
	m    *Metrics
}

func (p timedPlanner) Plan(ctx context.Context, in planner.PromptInput, opts plan.Options) (planner.Outcome, error) {
	start := time.Now()
	out, err := p.next.Plan(ctx, in, opts)
	outcome := "unreachable"
	var inv *planner.InvalidOutputError
	switch {
	case err == nil && out.Result.Plan != nil:
		outcome = string(out.Result.Plan.Kind)
	case err == nil:
		outcome = "invalid"
	case errors.As(err, &inv):
		outcome = "invalid"
	case errors.Is(err, planner.ErrTimeout):
		outcome = "timeout"
	case ctx.Err() != nil:
		return out, err // shutting down: not the model's latency
	}
	p.m.planning.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
	return out, err
}

// QueueDepth reports how many requests wait for a worker and how many
// workers hold unfinished; *pending.Queue is one.
type QueueDepth interface {
	Depth(ctx context.Context) (waiting, inFlight int64, err error)
}

// WatchQueue adds bobnet_queue_depth, read from q at each scrape so every
// replica reports the shared queue as it is. A failed read is logged and
// leaves the series out of that scrape rather than reporting a zero.
func (m *Metrics) WatchQueue(q QueueDepth, logger *slog.Logger) {
	m.registry.MustRegister(queueCollector{q: q, wait: m.scrapeWait, logger: logger})
}

var queueDepthDesc = prometheus.NewDesc("bobnet_queue_depth",
	"Requests in the shared queue: waiting for a worker, or in_flight with one.", []string{"state"}, nil)

type queueCollector struct {
	q      QueueDepth
	wait   time.Duration
	logger *slog.Logger
}

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- queueDepthDesc }

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.wait)
	defer cancel()
	waiting, inFlight, err := c.q.Depth(ctx)
	if err != nil {
		c.logger.Warn("metrics: read queue depth", "err", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(waiting), "waiting")
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(inFlight), "in_flight")
}
