package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpapi"
)

// fakeUsage answers BudgetStatus from a table and records what it was
// asked.
type fakeUsage struct {
	mu     sync.Mutex
	asked  []board.Channel
	budget map[string]bot.Budget
	err    error
}

func (f *fakeUsage) BudgetStatus(_ context.Context, ch board.Channel) (bot.Budget, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, ch)
	return f.budget[ch.Key()], f.err
}

func usageServer(t *testing.T, eng *fakeUsage) string {
	t.Helper()
	r := chi.NewRouter()
	httpapi.NewUsage(eng, slog.New(slog.DiscardHandler)).Routes(r)
	ts := httptest.NewServer(r)
	t.Cleanup(ts.Close)
	return ts.URL
}

func getUsage(t *testing.T, base, query string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/usage" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: content type %q", query, ct)
	}
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// TestUsageRoute: the channel's use and budget as the engine reports
// them, the day they count, and no budget where none applies; every
// channel key form is read; a bad one is a 400 that asks the engine
// nothing; an engine that cannot answer is a 503.
func TestUsageRoute(t *testing.T) {
	t.Parallel()
	resets := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	eng := &fakeUsage{budget: map[string]bot.Budget{
		"slack:T1/C1":               {Used: 1200, Limit: 1000, Resets: resets},
		"console:general":           {Used: 300, Limit: 1000, Resets: resets},
		"matrix:!news:example.org":  {Used: 42, Resets: resets},
		"slack:C_NEWS":              {Used: 7, Resets: resets},
		"console:hook-forms":        {Resets: resets},
		"slack:E0123-x/C_under_sc0": {Used: 1, Resets: resets},
	}}
	base := usageServer(t, eng)

	code, out := getUsage(t, base, "?channel=slack:T1%2FC1")
	if code != http.StatusOK || out["channel"] != "slack:T1/C1" || out["day"] != "2026-11-28" || out["tokens"] != 1200.0 || out["resets"] != "2026-11-29T00:00:00Z" {
		t.Fatalf("over budget: %d %v", code, out)
	}
	if b, _ := out["budget"].(map[string]any); b["tokens_per_day"] != 1000.0 || b["remaining"] != 0.0 || b["over"] != true {
		t.Errorf("over budget: budget %v", out["budget"])
	}
	code, out = getUsage(t, base, "?channel=console:general")
	if b, _ := out["budget"].(map[string]any); code != http.StatusOK || b["remaining"] != 700.0 || b["over"] != false {
		t.Errorf("within budget: %d %v", code, out)
	}
	code, out = getUsage(t, base, "?channel=matrix:!news:example.org")
	if _, has := out["budget"]; code != http.StatusOK || has || out["tokens"] != 42.0 {
		t.Errorf("no budget: %d %v", code, out)
	}
	for _, q := range []string{"?channel=slack:C_NEWS", "?channel=console:hook-forms", "?channel=matrix%3A%21news%3Aexample.org", "?channel=slack:E0123-x/C_under_sc0"} {
		if code, out := getUsage(t, base, q); code != http.StatusOK {
			t.Errorf("%s: %d %v", q, code, out)
		}
	}

	eng.mu.Lock()
	asked := len(eng.asked)
	eng.mu.Unlock()
	for _, q := range []string{"", "?channel=", "?chan=console:general", "?channel=console:general&channel=console:x", "?channel=nope",
		"?channel=default", "?channel=slack:*", "?channel=matrix:*", "?channel=web:x", "?channel=console:UPPER", "?channel=slack:T1/C1/X",
		"?channel=slack:T1/", "?channel=slack:C%201", "?channel=matrix:!news", "?channel=matrix:!a%09b:example.org",
		"?channel=slack:" + strings.Repeat("C", 400)} {
		code, out := getUsage(t, base, q)
		if msg, _ := out["error"].(string); code != http.StatusBadRequest || msg == "" {
			t.Errorf("%s: %d %v, want a 400 saying why", q, code, out)
		}
	}
	eng.mu.Lock()
	if len(eng.asked) != asked {
		t.Errorf("a bad channel reached the engine: %v", eng.asked[asked:])
	}
	eng.mu.Unlock()

	down := usageServer(t, &fakeUsage{err: errors.New("postgres: connection refused")})
	if code, out := getUsage(t, down, "?channel=console:general"); code != http.StatusServiceUnavailable || strings.Contains(out["error"].(string), "postgres") {
		t.Errorf("engine down: %d %v", code, out)
	}
}
