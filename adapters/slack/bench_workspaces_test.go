package slack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/secretbox"
	"github.com/bobnet/bobnet/store/storetest"
)

// workspaceIngest is /slack/events as served in multi-workspace mode,
// with n workspaces installed (in Postgres, tokens sealed): the engine's
// intake on a real Redis, and each event's workspace looked up in the
// adapter's client cache (read from Postgres the first time).
func workspaceIngest(b *testing.B, n int) (http.Handler, []string) {
	rdb := bottest.Redis(b)
	prefix := bottest.Prefix()
	ps := redisstore.NewInFlight(rdb, prefix)
	store := storetest.NewStore(b)
	eng, err := bot.New(bot.Config{
		Profiles: planner.DefaultProfiles(), UserRate: board.RateLimit{N: 20, Per: time.Minute}, ChannelRate: board.RateLimit{N: 60, Per: time.Minute},
	}, bottest.Deps(nopPlanner{}, store, ps, redisstore.NewQueue(rdb, prefix)), slog.New(slog.NewTextHandler(io.Discard, nil)))
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
	eng.Register(board.SourceSlack, bot.Registration{Poster: a, Notifier: a, Reminders: a, Groups: a})
	r := chi.NewRouter()
	a.Routes(r)
	return r, teams
}

// spreadOver is channelEach with the events spread over teams in turn,
// each authorized for its team's installation.
func spreadOver(teams []string) func(run string, n int64) map[string]any {
	return func(run string, n int64) map[string]any {
		team := teams[int(n)%len(teams)]
		ev := mention(run, n, team, fmt.Sprint("C_", run, "_", n))
		ev["authorizations"] = []map[string]any{{"team_id": team, "is_bot": true, "is_enterprise_install": false}}
		return ev
	}
}

// BenchmarkSlackIngestWorkspaces: event ingest in multi-workspace mode
// with one workspace installed and with 1,000 (events spread over them),
// and single-workspace mode beside them, in one run. Looking up the
// event's workspace must not make ingest slower with many of them.
func BenchmarkSlackIngestWorkspaces(b *testing.B) {
	b.Run("single-token", func(b *testing.B) { ingest(b, bobnetIngest(b), channelEach) })
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("workspaces=%d", n), func(b *testing.B) {
			h, teams := workspaceIngest(b, n)
			ingest(b, h, spreadOver(teams))
		})
	}
}
