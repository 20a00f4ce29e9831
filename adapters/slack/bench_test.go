package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/signing"
	"github.com/bobnet/bobnet/store/storetest"
)

// ingestClients is how many requests are in flight at once, as in a busy
// workspace's burst of mentions.
const ingestClients = 64

// ingest fires signed events at h from 64 concurrent clients and reports
// requests per second and the p99 ack latency. event makes the n-th
// event of this run (run tells runs of the benchmark apart, so their
// event ids do not dedupe each other).
func ingest(b *testing.B, h http.Handler, event func(run string, n int64) map[string]any) {
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: ingestClients, MaxConnsPerHost: ingestClients}}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var seq atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(max(1, ingestClients/runtime.GOMAXPROCS(0)))
	cpu := bottest.StartCPU(b, bottest.Redis(b))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			body, _ := json.Marshal(event(run, seq.Add(1)))
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			req, _ := http.NewRequest("POST", srv.URL+"/slack/events", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Slack-Request-Timestamp", ts)
			req.Header.Set("X-Slack-Signature", signing.SlackSignature("bench-secret", ts, body))
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mine = append(mine, time.Since(t0))
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
			}
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	cpu.Report(b)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// mention is the n-th app_mention of a run, by user Un in channel.
func mention(run string, n int64, team, channel string) map[string]any {
	return map[string]any{
		"type": "event_callback", "team_id": team, "event_id": fmt.Sprint("Ev", run, "_", n),
		"event": map[string]any{"type": "app_mention", "user": fmt.Sprint("U", n), "text": "<@UBOBNET> plan our daily research newspaper",
			"ts": fmt.Sprintf("1700000000.%06d", n), "channel": channel},
	}
}

// oneChannel is every mention in one busy channel.
func oneChannel(run string, n int64) map[string]any { return mention(run, n, "T1", "C_BUSY") }

// channelEach is every mention in a channel of its own.
func channelEach(run string, n int64) map[string]any {
	return mention(run, n, "T1", fmt.Sprint("C_", run, "_", n))
}

// bobnetIngest is /slack/events as served: signature check, the event
// decoded, and the engine's one-round-trip intake (dedupe, both rate
// limits, the request record and the stream entry) on a real Redis. The
// engine's workers do not run: this is the path that answers Slack.
func bobnetIngest(b *testing.B) http.Handler {
	rdb := bottest.Redis(b)
	prefix := bottest.Prefix()
	ps := redisstore.NewInFlight(rdb, prefix)
	eng, err := bot.New(bot.Config{
		Profiles: planner.DefaultProfiles(), UserRate: board.RateLimit{N: 20, Per: time.Minute}, ChannelRate: board.RateLimit{N: 60, Per: time.Minute},
	}, bottest.Deps(nopPlanner{}, storetest.NewStore(b), ps, redisstore.NewQueue(rdb, prefix)), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	a, err := New(context.Background(), Config{BotToken: "xoxb-bench", SigningSecret: "bench-secret", APIURL: "http://127.0.0.1:1/api/"}, eng, ps, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	eng.Register(board.SourceSlack, bot.Registration{Poster: a, Notifier: a, Reminders: a, Groups: a})
	r := chi.NewRouter()
	a.Routes(r)
	return r
}

// bareIngest is the floor: a handler that reads the body, checks the same
// signature and does one Redis XADD, on the same Redis.
func bareIngest(b *testing.B) http.Handler {
	rdb := bottest.Redis(b)
	stream := bottest.Prefix() + ":bare"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBody))
		if signing.VerifySlack(r.Header, "bench-secret", body, time.Now()) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if err := rdb.XAdd(r.Context(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": body}}).Err(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// BenchmarkSlackIngestOneChannel: distinct events from distinct people in
// one busy (or spammed) channel; past the channel's limit they are
// throttled, which must cost no more than taking them in.
func BenchmarkSlackIngestOneChannel(b *testing.B) { ingest(b, bobnetIngest(b), oneChannel) }

// BenchmarkSlackIngestOneChannelBaseline is the bare handler beside it.
func BenchmarkSlackIngestOneChannelBaseline(b *testing.B) { ingest(b, bareIngest(b), oneChannel) }

// BenchmarkSlackIngestChannelEach: distinct events, each in its own
// channel, so every one is taken in and queued.
func BenchmarkSlackIngestChannelEach(b *testing.B) { ingest(b, bobnetIngest(b), channelEach) }

// BenchmarkSlackIngestChannelEachBaseline is the bare handler beside it.
func BenchmarkSlackIngestChannelEachBaseline(b *testing.B) { ingest(b, bareIngest(b), channelEach) }

// nopPlanner is never called: the workers do not run in these benchmarks.
type nopPlanner struct{}

func (nopPlanner) Plan(context.Context, planner.PromptInput, plan.Options) (planner.Outcome, error) {
	return planner.Outcome{}, nil
}
