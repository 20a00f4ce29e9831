package slack

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/pending"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// queueOnly is an engine whose Submit only counts, as the real one only
// enqueues: the benchmark measures the ack path.
type queueOnly struct{ n atomic.Int64 }

func (q *queueOnly) Submit(context.Context, bot.Request) (bot.RequestID, error) {
	return bot.RequestID(fmt.Sprint("r_", q.n.Add(1))), nil
}
func (q *queueOnly) Approve(context.Context, bot.ProposalID, string) (bot.Approval, error) {
	return bot.Approval{}, nil
}
func (q *queueOnly) Cancel(context.Context, bot.ProposalID, string) (bot.Proposal, error) {
	return bot.Proposal{}, nil
}
func (q *queueOnly) Revise(context.Context, bot.ProposalID, string, string) (bot.RequestID, error) {
	return "", nil
}
func (q *queueOnly) ProposeAgain(context.Context, bot.ProposalID, string) (bot.RequestID, error) {
	return "", nil
}
func (q *queueOnly) Authorize(context.Context, bot.ProposalID, string) (bot.Proposal, error) {
	return bot.Proposal{}, nil
}
func (q *queueOnly) ChannelStatus(context.Context, bot.Channel) (board.Status, error) {
	return board.Status{}, bot.ErrNotFound
}
func (q *queueOnly) BoardStatus(context.Context, board.ID) (board.Status, error) {
	return board.Status{}, bot.ErrNotFound
}
func (q *queueOnly) MoveCard(context.Context, bot.Channel, string, string, string) (board.CardUpdate, error) {
	return board.CardUpdate{}, bot.ErrNotFound
}
func (q *queueOnly) AssignCard(context.Context, bot.Channel, string, string, string) (board.CardUpdate, error) {
	return board.CardUpdate{}, bot.ErrNotFound
}
func (q *queueOnly) NextCards(context.Context, bot.Channel) (board.Status, error) {
	return board.Status{}, bot.ErrNotFound
}

// memoryMarks is Memory in a map.
type memoryMarks struct {
	mu sync.Mutex
	m  map[string]bool
}

func (m *memoryMarks) SeenOnce(_ context.Context, key string, _ time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m[key] {
		return false, nil
	}
	m.m[key] = true
	return true, nil
}
func (m *memoryMarks) Mark(ctx context.Context, key string, ttl time.Duration) error {
	_, err := m.SeenOnce(ctx, key, ttl)
	return err
}
func (m *memoryMarks) Marked(_ context.Context, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[key], nil
}

// ackBench fires 64 concurrent signed app_mention requests per round at h
// and reports the p99 ack latency beside the mean.
func ackBench(b *testing.B, h http.Handler) {
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var seq atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(32) // 2 cores x 32 = 64 concurrent senders
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			body := fmt.Sprintf(`{"type":"event_callback","team_id":"T1","event_id":"Ev%d","event":{"type":"app_mention","user":"U1","text":"<@UB> plan item %d","ts":"1700000000.%06d","channel":"C1"}}`, n, n, n)
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			req, _ := http.NewRequest("POST", srv.URL+"/slack/events", strings.NewReader(body))
			req.Header.Set("X-Slack-Request-Timestamp", ts)
			req.Header.Set("X-Slack-Signature", SignatureHeader("bench-secret", ts, []byte(body)))
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			d := time.Since(start)
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
			}
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}
	})
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// BenchmarkEventsAck64 is /slack/events with signature check, dedupe and
// the hand-off to the engine, 64 requests at a time.
func BenchmarkEventsAck64(b *testing.B) {
	a, err := New(context.Background(), Config{BotToken: "xoxb-bench", SigningSecret: "bench-secret"}, &queueOnly{}, &memoryMarks{m: map[string]bool{}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	r := chi.NewRouter()
	a.Routes(r)
	ackBench(b, r)
}

// BenchmarkBaselineHMACHandler is the floor beside EventsAck64: a bare
// handler that reads the body, checks the same signature and answers 200.
func BenchmarkBaselineHMACHandler(b *testing.B) {
	v := Verifier{Secret: "bench-secret"}
	ackBench(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if v.Verify(r.Header, body) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
}

// BenchmarkEventsAck64RealEngine is EventsAck64 with the real engine behind
// it: dedupe in Redis, rate limits, the request record, the stream and the
// audit row in Postgres, all before the ack.
func BenchmarkEventsAck64RealEngine(b *testing.B) {
	env := bottest.New(b, func(c *bot.Config) { c.Workers = 1 })
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply {
		return plannertest.Reply{Content: `{"kind":"answer","answer":"ok"}`}
	})
	a, err := New(context.Background(), Config{BotToken: "xoxb-bench", SigningSecret: "bench-secret", APIURL: "http://127.0.0.1:1/api/"}, env.Engine, pending.NewStore(env.Redis, env.Prefix), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	r := chi.NewRouter()
	a.Routes(r)
	ackBench(b, r)
}
