package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
)

// UsageEngine is what the usage route needs of the bot engine: a
// channel's model use today against its budget; *bot.Engine is one.
type UsageEngine interface {
	BudgetStatus(ctx context.Context, ch board.Channel) (bot.Budget, error)
}

// Usage serves GET /api/v1/usage: one channel's model use, which /metrics
// does not show (its series name no channel). It needs the admin scope
// (apitoken.RequiredScope); a token limited to channels reads only its
// own channels' use.
type Usage struct {
	engine UsageEngine
	logger *slog.Logger
}

// NewUsage returns the usage route over engine.
func NewUsage(engine UsageEngine, logger *slog.Logger) *Usage {
	return &Usage{engine: engine, logger: logger}
}

// Routes mounts the usage route; the caller puts the guards in front.
func (u *Usage) Routes(r chi.Router) {
	r.Get("/api/v1/usage", u.get)
}

// usageView is a channel's model use today as the API shows it.
type usageView struct {
	Channel string `json:"channel"`
	// Day is the UTC day counted, YYYY-MM-DD.
	Day string `json:"day"`
	// Tokens are the model tokens the channel spent that day, planning
	// and runs together.
	Tokens int64 `json:"tokens"`
	// Budget is the channel's daily budget; absent when none applies.
	Budget *budgetView `json:"budget,omitempty"`
	// Resets is when the day's count starts again (midnight UTC).
	Resets time.Time `json:"resets"`
}

type budgetView struct {
	TokensPerDay int64 `json:"tokens_per_day"`
	Remaining    int64 `json:"remaining"`
	Over         bool  `json:"over"`
}

func (u *Usage) get(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for name := range q {
		if name != "channel" {
			httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("unknown query parameter %q: the only one is channel", name))
			return
		}
	}
	if len(q["channel"]) != 1 {
		httpjson.Error(w, http.StatusBadRequest, "give one channel: ?channel=<key>, e.g. console:general, slack:C0123 (slack:T0123%2FC0123 in multi-workspace mode) or matrix:!room:example.org")
		return
	}
	key := q.Get("channel")
	ch, problem := usageChannel(key)
	if problem != "" {
		httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("channel %q: %s", key, problem))
		return
	}
	if !reaches(r, ch.Key()) {
		// Whether or not the channel exists: a limited token learns
		// nothing of channels beyond its patterns.
		httpjson.Error(w, http.StatusNotFound, "no such channel among those this token reaches")
		return
	}
	b, err := u.engine.BudgetStatus(r.Context(), ch)
	if err != nil {
		u.logger.Error("read model usage", "channel", key, "err", err)
		httpjson.Error(w, http.StatusServiceUnavailable, "the usage store is unavailable; try again shortly")
		return
	}
	view := usageView{Channel: ch.Key(), Day: b.Resets.AddDate(0, 0, -1).Format(time.DateOnly), Tokens: b.Used, Resets: b.Resets}
	if b.Limit > 0 {
		view.Budget = &budgetView{TokensPerDay: b.Limit, Remaining: max(0, b.Limit-b.Used), Over: b.Over()}
	}
	httpjson.Write(w, http.StatusOK, view)
}

// usageChannel reads a channel key ("console:general", "slack:C0123",
// "slack:T0123/C0123", "matrix:!room:example.org") into its channel, or
// says what is wrong with it. A key names one channel: "default" and
// "<source>:*" are policy keys, not channels.
func usageChannel(key string) (board.Channel, string) {
	src, id, ok := strings.Cut(key, ":")
	switch {
	case key == "":
		return board.Channel{}, "empty: give a channel key such as console:general"
	case !ok || id == "":
		return board.Channel{}, "not a channel key <source>:<id> (console:general, slack:C0123, matrix:!room:example.org)"
	case !slices.Contains([]board.Source{board.SourceSlack, board.SourceMatrix, board.SourceConsole}, board.Source(src)):
		return board.Channel{}, fmt.Sprintf("unknown source %q (known: slack, matrix, console)", src)
	case len(key) > 300:
		return board.Channel{}, "longer than 300 characters"
	}
	ch := board.Channel{Source: board.Source(src), ID: id}
	switch ch.Source {
	case board.SourceConsole:
		if !board.ValidConsoleName(id) {
			return board.Channel{}, "a console channel is 1 to 64 lower-case letters, digits, - or _"
		}
	case board.SourceSlack:
		parts := strings.Split(id, "/")
		if len(parts) > 2 || !allSlackIDs(parts) {
			return board.Channel{}, "a Slack channel is its id (C0123), or in multi-workspace mode the workspace's and the channel's (T0123/C0123)"
		}
	case board.SourceMatrix:
		if !strings.HasPrefix(id, "!") || !strings.Contains(id[1:], ":") || strings.ContainsFunc(id, isSpaceOrControl) {
			return board.Channel{}, "a Matrix room is its id, like !room:example.org"
		}
	}
	return ch, ""
}

// allSlackIDs reports whether each part is a Slack id: letters, digits,
// _ or -, 1 to 64 of them.
func allSlackIDs(parts []string) bool {
	for _, p := range parts {
		if p == "" || len(p) > 64 {
			return false
		}
		for _, c := range p {
			if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
				return false
			}
		}
	}
	return true
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }
