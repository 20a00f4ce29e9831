package run_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/run"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestEditionRendersOutputsSafely: the run page shows each card's output
// as HTML from its Markdown, in dependency order, with links kept and
// anything that could run or load removed.
func TestEditionRendersOutputsSafely(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s)
	_, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: plan.Runners{Others: plan.Runner{Name: "model"}}, Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	job, _, err := s.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	output := "## Today's policy\n\nRead [the source](https://example.org/policy) and [this](javascript:alert(1)).\n\n<script>alert('x')</script><img src=x onerror=alert(2)>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
	if _, err := s.CompleteRunCard(ctx, job, "Planner", output); err != nil {
		t.Fatal(err)
	}
	// A card assigned to a person shows them by a readable label.
	if _, err := s.Pool().Exec(ctx, `UPDATE cards SET assignee = 'slack:T1/U9' WHERE board_id = $1 AND number = 2`, id); err != nil {
		t.Fatal(err)
	}
	router := chi.NewRouter()
	run.NewPages(s, storetest.Logger(t)).Routes(router)
	ts := httptest.NewServer(router)
	t.Cleanup(ts.Close)

	resp, err := http.Get(ts.URL + "/boards/" + string(id) + "/runs/1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(body)
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	if strings.Contains(page, "slack:T1/U9") || !strings.Contains(page, "NEWS-2 · @U9 · ") {
		t.Error("the person assigned NEWS-2 is not shown as @U9")
	}
	for _, want := range []string{"policy</h2>", `href="https://example.org/policy"`, `rel="nofollow`, "<table>", "Run 1", "Not written yet."} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>alert", "javascript:", "onerror", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	// NEWS-1 before the cards that depend on it, the synthesis after the
	// research.
	pos := func(h string) int { return strings.Index(page, `<article id="`+h+`"`) }
	if !(pos("NEWS-1") < pos("NEWS-2") && pos("NEWS-4") < pos("NEWS-5") && pos("NEWS-5") < pos("NEWS-6")) {
		t.Errorf("not in dependency order: %d %d %d %d %d", pos("NEWS-1"), pos("NEWS-2"), pos("NEWS-4"), pos("NEWS-5"), pos("NEWS-6"))
	}
	for _, missing := range []string{"/runs/2", "/runs/0", "/runs/x"} {
		resp, err := http.Get(ts.URL + "/boards/" + string(id) + missing)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("%s: %d", missing, resp.StatusCode)
		}
	}
}

func TestInDependencyOrder(t *testing.T) {
	t.Parallel()
	cards := []board.RunCard{
		{Card: "c", Handle: "C", DependsOn: []board.CardID{"a", "b"}},
		{Card: "a", Handle: "A"},
		{Card: "d", Handle: "D", DependsOn: []board.CardID{"c"}},
		{Card: "b", Handle: "B", DependsOn: []board.CardID{"a"}},
	}
	var got []string
	for _, c := range run.InDependencyOrder(cards) {
		got = append(got, c.Handle)
	}
	if strings.Join(got, "") != "ABCD" {
		t.Fatalf("order = %v", got)
	}
}
