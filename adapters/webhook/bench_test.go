package webhook_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/adapters/webhook"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/signing"
	"github.com/bobnet/bobnet/store/storetest"
)

const benchSecret = "bench-secret-0123"

// ingestBench fires signed deliveries, each with its own delivery id, from
// 64 concurrent senders at h and reports req/s and the p99 latency.
func ingestBench(b *testing.B, h http.Handler) {
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var seq atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(32) // 2 cores x 32 = 64 concurrent senders
	b.ReportAllocs()
	cpu := bottest.StartCPU(b, bottest.Redis(b))
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			body := fmt.Sprintf(`{"text":"plan release %d of the newsletter","user":"ci"}`, n)
			req, _ := http.NewRequest("POST", srv.URL+"/api/v1/hooks/bench", strings.NewReader(body))
			req.Header.Set("X-Bobnet-Signature", signing.SHA256Signature(benchSecret, []byte(body)))
			req.Header.Set("X-Bobnet-Delivery", fmt.Sprint("d-", n))
			req.Header.Set("Content-Type", "application/json")
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			d := time.Since(t0)
			if resp.StatusCode != http.StatusAccepted {
				b.Errorf("status %d", resp.StatusCode)
			}
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	b.StopTimer()
	cpu.Report(b)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// BenchmarkWebhookIngest is POST /api/v1/hooks/{name} as served:
// signature check, the payload decoded and templated, and the engine's
// one-round-trip intake in Redis, which also dedupes the delivery id (the
// worker records it in Postgres when it takes the request). The engine's
// workers do not run, as in the Slack ingest benchmark: this is the path
// that answers the sender, and planning would take the same two cores.
func BenchmarkWebhookIngest(b *testing.B) {
	rdb := bottest.Redis(b)
	prefix := bottest.Prefix()
	store := storetest.NewStore(b)
	ps := redisstore.NewInFlight(rdb, prefix)
	eng, err := bot.New(bot.Config{Profiles: planner.DefaultProfiles()},
		bottest.Deps(nopPlanner{}, store, ps, redisstore.NewQueue(rdb, prefix)), storetest.Logger(b))
	if err != nil {
		b.Fatal(err)
	}
	hooks, err := webhook.Build(map[string]string{"bench": benchSecret}, webhook.File{})
	if err != nil {
		b.Fatal(err)
	}
	r := chi.NewRouter()
	webhook.New(hooks, eng, storetest.Logger(b)).Routes(r)
	b.ResetTimer()
	ingestBench(b, r)
}

// nopPlanner is never called: the workers do not run in these benchmarks.
type nopPlanner struct{}

func (nopPlanner) Plan(context.Context, planner.PromptInput, plan.Options) (planner.Outcome, error) {
	return planner.Outcome{}, nil
}

// BenchmarkWebhookIngestBaseline is the floor beside WebhookIngest: a
// bare handler that reads the body, checks the same HMAC and does one
// Redis XADD.
func BenchmarkWebhookIngestBaseline(b *testing.B) {
	rdb := bottest.Redis(b)
	stream := bottest.Prefix() + ":bare"
	b.Cleanup(func() { rdb.Del(b.Context(), stream) })
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, webhook.MaxBody))
		if err != nil || signing.Verify(signing.Detect(r.Header), r.Header, benchSecret, body, time.Now()) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		id, err := rdb.XAdd(r.Context(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": body}}).Result()
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"request_id":%q}`+"\n", id)
	})
	ingestBench(b, h)
}
