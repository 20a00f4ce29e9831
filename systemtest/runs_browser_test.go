package systemtest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/web/webtest"
)

// runJSON is a run as the API answers it.
type runJSON struct {
	ID     string `json:"id"`
	Number int    `json:"number"`
	State  string `json:"state"`
	URL    string `json:"url"`
	Cards  []struct {
		CardID    string   `json:"card_id"`
		Handle    string   `json:"handle"`
		Status    string   `json:"status"`
		Runner    string   `json:"runner"`
		Output    string   `json:"output"`
		DependsOn []string `json:"depends_on"`
	} `json:"cards"`
}

// TestRunTheNewspaperFromTheBoardPage: the newspaper board is run from the
// board page's Run now button; the model works the researchers, the
// editor (whose prompt holds their findings) and the reviewers, people
// accept each output and build the website, and the run page shows the
// edition in dependency order, readable at 1280 and 390 px.
func TestRunTheNewspaperFromTheBoardPage(t *testing.T) {
	t.Parallel()
	browser := webtest.Browser(t)
	a := start(t, withEnv(map[string]string{"BOBNET_API_TOKEN": "test-token"}))
	plan := plannertest.NewspaperPlan(t)
	a.Model.Handle(func(req openai.ChatCompletionRequest) plannertest.Reply {
		if user := plannertest.LastUserMessage(req); strings.HasPrefix(user, "Card NEWS-") {
			handle := strings.TrimSuffix(strings.Fields(user)[1], ".")
			found := 0
			for i := 2; i <= 4; i++ {
				if strings.Contains(user, fmt.Sprintf("Findings of NEWS-%d", i)) {
					found++
				}
			}
			return plannertest.Reply{Content: fmt.Sprintf("## %s\n\nFindings of %s, having read %d researchers, from [a source](https://example.org/%s).\n\n- one\n- two\n", handle, handle, found, handle)}
		}
		return plannertest.Reply{Content: plan}
	})
	var sub struct {
		RequestID string `json:"request_id"`
	}
	if code := a.call(t, "POST", "/api/v1/channels/newsroom/messages", map[string]string{"user": "alice", "text": "plan our daily research newspaper"}, &sub); code != http.StatusAccepted {
		t.Fatalf("post message: %d", code)
	}
	req := a.waitRequest(t, sub.RequestID)
	var approved struct {
		BoardID string `json:"board_id"`
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+req.ProposalID+"/approve", map[string]string{"user": "alice"}, &approved); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	board := approved.BoardID

	// The page, signed in: not run yet, and a Run now button.
	if err := chromedp.Do(browser, chromedp.Navigate(a.URL+"/")); err != nil {
		t.Fatal(err)
	}
	browse(t, browser, chromedp.Evaluate[bool](`localStorage.setItem('bobnet.user', 'carol'); localStorage.setItem('bobnet.token', 'test-token'); true`))
	if err := chromedp.Do(browser, chromedp.Navigate(a.URL+"/boards/"+board), chromedp.WaitVisible(chromedp.CSS("#run-now"))); err != nil {
		t.Fatal(err)
	}
	if text := browse(t, browser, chromedp.Evaluate[string](`document.getElementById('runs').innerText`)); !strings.Contains(text, "Not run yet") {
		t.Fatalf("runs line: %q", text)
	}
	if err := chromedp.Do(browser, chromedp.Click(chromedp.CSS("#run-now"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, browser, "run 1 on the page", `document.getElementById('runs').innerText.includes('Run 1: running') && document.getElementById('run-now').hidden`)

	// Work it: accept what the model wrote, move the Coder's cards.
	var runs struct {
		Runs []runJSON `json:"runs"`
	}
	if code := a.call(t, "GET", "/api/v1/boards/"+board+"/runs", nil, &runs); code != 200 || len(runs.Runs) != 1 {
		t.Fatalf("runs: %d %+v", code, runs)
	}
	id := runs.Runs[0].ID
	deadline := time.Now().Add(90 * time.Second)
	var r runJSON
	for {
		if code := a.call(t, "GET", "/api/v1/runs/"+id, nil, &r); code != 200 {
			t.Fatalf("run: %d", code)
		}
		if r.State != "running" || time.Now().After(deadline) {
			break
		}
		done := map[string]bool{}
		for _, c := range r.Cards {
			done[c.CardID] = c.Status == "Done"
		}
		for _, c := range r.Cards {
			switch {
			case c.Status == "Review":
				if code := a.call(t, "POST", "/api/v1/runs/"+id+"/cards/"+c.Handle+"/review", map[string]string{"user": "carol", "decision": "accept"}, nil); code != 200 {
					t.Fatalf("accept %s: %d", c.Handle, code)
				}
			case c.Runner == "" && c.Status != "Done":
				ready := true
				for _, d := range c.DependsOn {
					ready = ready && done[d]
				}
				if ready {
					if code := a.call(t, "PATCH", "/api/v1/cards/"+c.Handle, map[string]string{"user": "carol", "status": "Done"}, nil); code != 200 {
						t.Fatalf("move %s: %d", c.Handle, code)
					}
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r.State != "done" {
		t.Fatalf("run ended %s: %+v", r.State, r)
	}
	for _, c := range r.Cards {
		if c.Handle == "NEWS-5" && !strings.Contains(c.Output, "having read 3 researchers") {
			t.Errorf("the editor did not read the researchers: %q", c.Output)
		}
	}

	// The edition, at both widths.
	for _, width := range []int64{1280, 390} {
		if err := chromedp.Do(browser, chromedp.EmulateViewport(width, 900), chromedp.Navigate(r.URL), chromedp.WaitVisible(chromedp.CSS("article"))); err != nil {
			t.Fatal(err)
		}
		got := browse(t, browser, chromedp.Evaluate[map[string]any](`({
			overflow: document.documentElement.scrollWidth > window.innerWidth + 1,
			articles: document.querySelectorAll('article').length,
			order: [...document.querySelectorAll('article')].map(a => a.id).join(' '),
			state: document.getElementById('state').textContent,
			links: document.querySelectorAll('article a[href^="https://example.org/"]').length
		})`))
		if got["overflow"] != false || got["articles"] != float64(10) || got["state"] != "done" || got["links"] != float64(8) {
			t.Errorf("at %d px: %v", width, got)
		}
		order := strings.Fields(got["order"].(string))
		pos := map[string]int{}
		for i, h := range order {
			pos[h] = i
		}
		if !(pos["NEWS-1"] < pos["NEWS-2"] && pos["NEWS-4"] < pos["NEWS-5"] && pos["NEWS-6"] < pos["NEWS-10"]) {
			t.Errorf("at %d px, not in dependency order: %v", width, order)
		}
		if dir := os.Getenv("BOBNET_SCREENSHOTS"); dir != "" {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("run-page-%d.png", width)), browse(t, browser, chromedp.FullScreenshot(100)), 0o644)
		}
	}
	// The board page links the edition.
	if err := chromedp.Do(browser, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(a.URL+"/boards/"+board), chromedp.WaitVisible(chromedp.CSS("#latest-run"))); err != nil {
		t.Fatal(err)
	}
	if text := browse(t, browser, chromedp.Evaluate[string](`document.getElementById('runs').innerText`)); !strings.Contains(text, "Run 1: done") || !strings.Contains(text, "the edition") {
		t.Errorf("runs line after the run: %q", text)
	}
	if dir := os.Getenv("BOBNET_SCREENSHOTS"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "board-after-run.png"), browse(t, browser, chromedp.CaptureScreenshot()), 0o644)
	}
}
