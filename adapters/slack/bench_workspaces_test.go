package slack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
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

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/pending"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/secretbox"
	"github.com/bobnet/bobnet/signing"
	"github.com/bobnet/bobnet/store/storetest"
)

// workspaceIngest is /slack/events as served in multi-workspace mode,
// with n workspaces installed (in Postgres, tokens sealed): the engine's
// intake on a real Redis, and each event's workspace looked up in the
// adapter's client cache (read from Postgres the first time).
func workspaceIngest(b *testing.B, n int) (http.Handler, []string) {
	rdb := bottest.Redis(b)
	prefix := bottest.Prefix()
	ps := pending.NewStore(rdb, prefix)
	store := storetest.NewStore(b)
	eng, err := bot.New(bot.Config{
		Profiles: planner.DefaultProfiles(), UserRate: bot.RateLimit{N: 20, Per: time.Minute}, ChannelRate: bot.RateLimit{N: 60, Per: time.Minute},
	}, bottest.Deps(nopPlanner{}, store, ps, pending.NewQueue(rdb, prefix)), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(base64.StdEncoding.EncodeToString(key))
	if err != nil {
		b.Fatal(err)
	}
	installs := store.SlackInstallations(box)
	teams := make([]string, n)
	for i := range teams {
		teams[i] = fmt.Sprintf("T%05d", i)
		if err := installs.Save(context.Background(), board.SlackInstallation{ID: teams[i], TeamID: teams[i], BotToken: "xoxb-bench-" + teams[i]}); err != nil {
			b.Fatal(err)
		}
	}
	a, err := New(context.Background(), Config{SigningSecret: "bench-secret", APIURL: "http://127.0.0.1:1/api/",
		OAuth: &OAuthConfig{ClientID: "1.2", ClientSecret: "bench", Installations: installs, StateKey: box.Derive("state")}},
		eng, ps, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	eng.Register(bot.SourceSlack, bot.Registration{Poster: a, Notifier: a, Reminders: a, Groups: a})
	r := chi.NewRouter()
	a.Routes(r)
	return r, teams
}

// ingestTeams is ingest (64 concurrent clients, each event in its own
// channel) with the events spread over teams in turn.
func ingestTeams(b *testing.B, h http.Handler, teams []string) {
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
			n := seq.Add(1)
			team := teams[int(n)%len(teams)]
			body, _ := json.Marshal(map[string]any{
				"type": "event_callback", "team_id": team, "event_id": fmt.Sprint("Ev", run, "_", n),
				"authorizations": []map[string]any{{"team_id": team, "is_bot": true, "is_enterprise_install": false}},
				"event": map[string]any{"type": "app_mention", "user": fmt.Sprint("U", n), "text": "<@UBOBNET> plan our daily research newspaper",
					"ts": fmt.Sprintf("1700000000.%06d", n), "channel": fmt.Sprint("C_", run, "_", n)},
			})
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

// BenchmarkSlackIngestWorkspaces: event ingest in multi-workspace mode
// with one workspace installed and with 1,000 (events spread over them),
// and single-workspace mode beside them, in one run. Looking up the
// event's workspace must not make ingest slower with many of them.
func BenchmarkSlackIngestWorkspaces(b *testing.B) {
	b.Run("single-token", func(b *testing.B) { ingest(b, bobnetIngest(b), true) })
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("workspaces=%d", n), func(b *testing.B) {
			h, teams := workspaceIngest(b, n)
			ingestTeams(b, h, teams)
		})
	}
}
