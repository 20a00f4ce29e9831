package systemtest

import (
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/planner/demomodel"
)

// TestDemoMorningEdition is make demo's newspaper from request to edition,
// with the canned model and no model server: the approved plan schedules
// the board daily, a run's cards get canned Markdown articles (not the
// plan's JSON), reviews are accepted, and the edition page shows the
// articles rendered.
func TestDemoMorningEdition(t *testing.T) {
	t.Parallel()
	m, err := demomodel.Load("../testdata/plans", "../testdata/demo/articles", 0)
	if err != nil {
		t.Fatal(err)
	}
	model := httptest.NewServer(m)
	t.Cleanup(model.Close)
	a := start(t, withEnv(map[string]string{"OPENAI_BASE_URL": model.URL + "/v1", "BOBNET_MODEL": demomodel.Name}))

	var accepted struct {
		RequestID string `json:"request_id"`
	}
	a.call(t, "POST", "/api/v1/channels/demo/messages", map[string]string{"user": "alice", "text": "plan our daily research newspaper"}, &accepted)
	req := a.waitRequest(t, accepted.RequestID)
	if req.ProposalID == "" {
		t.Fatalf("no proposal: %+v", req)
	}
	var approved struct {
		BoardID string `json:"board_id"`
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+req.ProposalID+"/approve", map[string]string{"user": "alice"}, &approved); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	var sched struct {
		Cron, Timezone string
		Next           time.Time
	}
	if code := a.call(t, "GET", "/api/v1/boards/"+approved.BoardID+"/schedule", nil, &sched); code != http.StatusOK || sched.Cron != "0 6 * * *" || sched.Timezone != "UTC" || sched.Next.UTC().Hour() != 6 {
		t.Fatalf("schedule: %d %+v", code, sched)
	}

	var started struct {
		ID string `json:"id"`
	}
	if code := a.call(t, "POST", "/api/v1/boards/"+approved.BoardID+"/runs", map[string]string{"user": "alice"}, &started); code != http.StatusCreated {
		t.Fatalf("start a run: %d", code)
	}
	type runCard struct {
		Card                                         string `json:"card_id"`
		Handle, Title, Status, Runner, Output, Error string
		DependsOn                                    []string `json:"depends_on"`
	}
	var run struct {
		State string
		Cards []runCard
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		if code := a.call(t, "GET", "/api/v1/runs/"+started.ID, nil, &run); code != http.StatusOK {
			t.Fatalf("read the run: %d", code)
		}
		if run.State != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end: %+v", run.Cards)
		}
		done := map[string]bool{}
		for _, c := range run.Cards {
			done[c.Card] = c.Status == "Done"
		}
		for _, c := range run.Cards {
			ready := true
			for _, d := range c.DependsOn {
				ready = ready && done[d]
			}
			switch {
			case c.Status == "Review":
				if code := a.call(t, "POST", "/api/v1/runs/"+started.ID+"/cards/"+c.Handle+"/review", map[string]string{"user": "alice", "decision": "accept"}, nil); code != http.StatusOK {
					t.Fatalf("review %s: %d", c.Handle, code)
				}
			case c.Runner == "" && c.Status != "Done" && ready:
				// People work the Coder's cards.
				if code := a.call(t, "PATCH", "/api/v1/cards/"+c.Handle, map[string]string{"user": "carol", "status": "Done"}, nil); code != http.StatusOK {
					t.Fatalf("%s done: %d", c.Handle, code)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if run.State != "done" {
		t.Fatalf("run ended %s: %+v", run.State, run.Cards)
	}
	articles := 0
	for _, c := range run.Cards {
		if c.Runner == "" {
			continue
		}
		articles++
		if !strings.HasPrefix(c.Output, demomodel.ArticleLabel) || strings.Contains(c.Output, "propose_actions") {
			t.Errorf("%s (%s): output %q, want a canned article", c.Handle, c.Title, c.Output)
		}
	}
	if articles < 5 {
		t.Fatalf("%d cards worked by the model", articles)
	}

	resp, err := http.Get(a.URL + "/boards/" + approved.BoardID + "/runs/1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	page := string(body)
	for _, want := range []string{"<h1>The Morning Edition</h1>", "<h2>Checking the claims</h2>", "<strong>40 to 60 percent</strong>", "<table>", "<blockquote>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the edition page has no %s", want)
		}
	}
	if resp.StatusCode != http.StatusOK || strings.Contains(html.UnescapeString(page), `"kind"`) {
		t.Errorf("edition page: %d, or it shows the plan's JSON", resp.StatusCode)
	}
}
