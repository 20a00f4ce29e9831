// Package metrics is BobNet's own Prometheus series: requests by source
// and outcome, queue depth, planner latency, proposals by outcome and the
// time from an approval to its board being committed. A *Metrics is the
// engine's bot.Observer and wraps its planner; the HTTP handler serves
// these with the Go runtime's and the process's series.
//
// The series live in a github.com/VictoriaMetrics/metrics Set rather than
// a client_golang registry: that library writes the same text format
// without linking protobuf and some forty packages, each of which costs
// an idle process resident memory.
package metrics

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	vmetrics "github.com/VictoriaMetrics/metrics"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
)

// Bucket bounds of the histograms, in seconds. Dashboards and alerts
// compute quantiles from them, so they only change on purpose.
var (
	planningBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}
	commitBuckets   = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	runCardBuckets  = []float64{1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}
)

// Metrics holds BobNet's series in a set of its own.
type Metrics struct {
	set        *vmetrics.Set
	commit     *vmetrics.PrometheusHistogram
	runCards   *vmetrics.PrometheusHistogram
	queue      atomic.Pointer[queueWatch]
	scrapeWait time.Duration
}

// New returns the series. Its handler adds the Go runtime and process
// series at each scrape.
func New() *Metrics {
	// The library's switch for # HELP and # TYPE lines is global; BobNet
	// is its only user in the process and always wants them.
	vmetrics.ExposeMetadata(true)
	set := vmetrics.NewSet()
	return &Metrics{
		set:        set,
		commit:     set.NewPrometheusHistogramExt(commitFamily.name, commitBuckets),
		runCards:   set.NewPrometheusHistogramExt(runCardFamily.name, runCardBuckets),
		scrapeWait: 2 * time.Second,
	}
}

// RunEnded counts a run that ended, by its state.
func (m *Metrics) RunEnded(state string) {
	m.set.GetOrCreateCounter(series(runsFamily.name, "state", runStates.value(state))).Inc()
}

// CardWorked records how long a runner took over one card.
func (m *Metrics) CardWorked(d time.Duration) { m.runCards.Update(d.Seconds()) }

// RequestRefused counts a request that was not queued.
func (m *Metrics) RequestRefused(src board.Source, outcome string) {
	m.countRequest(string(src), outcome)
}

// RequestAnswered counts a request by the kind of its answer, and a
// proposal created when that answer was one.
func (m *Metrics) RequestAnswered(src board.Source, kind board.ReplyKind) {
	m.countRequest(string(src), string(kind))
	if kind == board.ReplyProposal {
		m.countProposal("created")
	}
}

// countRequest counts one request; labels go in client_golang's sorted
// order so the series read as they always did.
func (m *Metrics) countRequest(source, outcome string) {
	m.set.GetOrCreateCounter(series(requestsFamily.name, "outcome", requestOutcomes.value(outcome), "source", sources.value(source))).Inc()
}

func (m *Metrics) countProposal(outcome string) {
	m.set.GetOrCreateCounter(series(proposalsFamily.name, "outcome", proposalOutcomes.value(outcome))).Inc()
}

// ProposalClosed counts a proposal leaving pending.
func (m *Metrics) ProposalClosed(state board.ProposalState) { m.countProposal(string(state)) }

// Committed records how long an approval took to commit its board.
func (m *Metrics) Committed(d time.Duration) { m.commit.Update(d.Seconds()) }

// ModelTokens counts the model tokens a channel of source spent. The
// channel itself is no label: per-channel use is read from the API
// (GET /api/v1/usage), never from /metrics.
func (m *Metrics) ModelTokens(src board.Source, n int) {
	c := m.set.GetOrCreateCounter(series(tokensFamily.name, "source", sources.value(string(src))))
	if n > 0 {
		c.Add(n)
	}
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
	p.m.set.GetOrCreatePrometheusHistogramExt(series(planningFamily.name, "outcome", planningOutcomes.value(outcome)), planningBuckets).
		Update(time.Since(start).Seconds())
	return out, err
}

// QueueDepth reports how many requests wait for a worker and how many
// workers hold unfinished; *redisstore.Queue is one.
type QueueDepth interface {
	Depth(ctx context.Context) (waiting, inFlight int64, err error)
}

type queueWatch struct {
	q      QueueDepth
	logger *slog.Logger
}

// WatchQueue adds bobnet_queue_depth, read from q at each scrape so every
// replica reports the shared queue as it is. A failed read is logged and
// leaves the series out of that scrape rather than reporting a zero. A
// later call replaces the queue watched.
func (m *Metrics) WatchQueue(q QueueDepth, logger *slog.Logger) {
	m.queue.Store(&queueWatch{q: q, logger: logger})
}

// contentType is the Prometheus text format, version 0.0.4.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves the series in Prometheus' text format: BobNet's own, the
// queue depth read now, and the Go runtime's and the process's.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		m.write(r.Context(), &buf)
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(buf.Bytes())
	})
}

// write puts one scrape's exposition in buf.
func (m *Metrics) write(ctx context.Context, buf *bytes.Buffer) {
	var own bytes.Buffer
	m.set.WritePrometheus(&own)
	writeWithHelp(buf, own.Bytes())
	if qw := m.queue.Load(); qw != nil {
		m.writeQueueDepth(ctx, buf, qw)
	}
	vmetrics.WriteProcessMetrics(buf)
	vmetrics.WriteFDMetrics(buf)
}

func (m *Metrics) writeQueueDepth(ctx context.Context, buf *bytes.Buffer, qw *queueWatch) {
	ctx, cancel := context.WithTimeout(ctx, m.scrapeWait)
	defer cancel()
	waiting, inFlight, err := qw.q.Depth(ctx)
	if err != nil {
		qw.logger.Warn("metrics: read queue depth", "err", err)
		return
	}
	writeHeader(buf, queueDepthFamily)
	writeSample(buf, series(queueDepthFamily.name, "state", "waiting"), waiting)
	writeSample(buf, series(queueDepthFamily.name, "state", "in_flight"), inFlight)
}
