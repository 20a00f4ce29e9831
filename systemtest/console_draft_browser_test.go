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

// TestConsoleShowsTheDraftAndTheRun: with a model that streams the
// newspaper plan over about three seconds, the console shows the plan's
// cards as drafts while they come (marked as drafts), the checked preview
// replaces them, and once approved and run, one panel shows the run's
// cards moving until every one is complete, with the edition's link.
func TestConsoleShowsTheDraftAndTheRun(t *testing.T) {
	t.Parallel()
	browser := webtest.Browser(t)
	a := start(t)
	plan := plannertest.NewspaperPlan(t)
	a.Model.Handle(func(req openai.ChatCompletionRequest) plannertest.Reply {
		if user := plannertest.LastUserMessage(req); strings.HasPrefix(user, "Card NEWS-") {
			handle := strings.TrimSuffix(strings.Fields(user)[1], ".")
			return plannertest.Reply{Content: "## " + handle + "\n\nFindings of " + handle + ".", Delay: 300 * time.Millisecond}
		}
		return plannertest.Reply{Content: plan, Chunks: 30, ChunkDelay: 100 * time.Millisecond}
	})
	shot := func(name string) {
		if dir := os.Getenv("BOBNET_SCREENSHOTS"); dir != "" {
			_ = os.WriteFile(filepath.Join(dir, name), browse(t, browser, chromedp.CaptureScreenshot()), 0o644)
		}
	}

	if err := chromedp.Do(browser, chromedp.Navigate(a.URL+"/c/newsroom"), chromedp.WaitVisible(chromedp.CSS("#text"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, browser, "the event stream", `document.getElementById('conn').textContent.includes('connected')`)
	sent := time.Now()
	if err := chromedp.Do(browser,
		chromedp.SetValue(chromedp.CSS("#user"), "alice"),
		chromedp.SendKeys(chromedp.CSS("#text"), "plan our daily research newspaper"),
		chromedp.Click(chromedp.CSS("#send")),
	); err != nil {
		t.Fatal(err)
	}
	// The draft grows card by card before the preview exists.
	waitFor(t, browser, "a draft with cards", `document.querySelectorAll('[data-testid=draft] [data-testid=draft-card]').length >= 2`)
	firstDraft := time.Since(sent)
	got := browse(t, browser, chromedp.Evaluate[map[string]any](`({
		cards: document.querySelectorAll('[data-testid=draft] [data-testid=draft-card]').length,
		marked: [...document.querySelectorAll('[data-testid=draft-card]')].every(c => c.innerText.includes('Draft')),
		text: document.querySelector('[data-testid=draft]').innerText,
		previews: document.querySelectorAll('[data-testid=preview]:not([data-testid=draft])').length,
	})`))
	if got["marked"] != true || got["previews"] != float64(0) || !strings.Contains(got["text"].(string), "Daily Research Newspaper") ||
		!strings.Contains(got["text"].(string), "not yet checked") || got["cards"].(float64) >= 10 {
		t.Fatalf("the draft while streaming: %v", got)
	}
	shot("console-draft.png")
	t.Logf("first draft after %s with %v cards", firstDraft, got["cards"])
	waitFor(t, browser, "more draft cards", fmt.Sprintf(`document.querySelectorAll('[data-testid=draft-card]').length > %v || !document.querySelector('[data-testid=draft]')`, got["cards"]))

	// The preview replaces the draft: no draft is left.
	waitFor(t, browser, "the preview", `document.querySelectorAll('[data-testid=preview] [data-testid=preview-card]').length === 10`)
	if n := browse(t, browser, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=draft], [data-testid=draft-card]').length`)); n != 0 {
		t.Fatalf("%d draft elements left beside the preview", n)
	}
	// Reloaded, the channel shows the preview and no draft.
	if err := chromedp.Do(browser, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("[data-testid=preview]"))); err != nil {
		t.Fatal(err)
	}
	if n := browse(t, browser, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=draft]').length`)); n != 0 {
		t.Fatalf("a draft came back after a reload")
	}

	// Approve and run: one panel follows the run.
	doRedrawn(t, browser, chromedp.Click(chromedp.CSS("[data-testid=approve]")))
	waitFor(t, browser, "the board link", `!!document.querySelector('[data-testid=board-link]')`)
	boardURL := browse(t, browser, chromedp.Evaluate[string](`document.querySelector('[data-testid=board-link]').href`))
	boardID := boardURL[strings.LastIndex(boardURL, "/")+1:]
	var started runJSON
	if code := a.call(t, "POST", "/api/v1/boards/"+boardID+"/runs", map[string]string{"user": "alice"}, &started); code != http.StatusCreated {
		t.Fatalf("start a run: %d", code)
	}
	waitFor(t, browser, "the run's panel", `document.querySelectorAll('[data-testid=run-progress] [data-testid=run-task]').length === 10`)
	waitFor(t, browser, "a card in progress or done", `[...document.querySelectorAll('[data-testid=run-task]')].some(t => t.dataset.status !== 'pending')`)
	shot("console-run-progress.png")
	deadline := time.Now().Add(90 * time.Second)
	var r runJSON
	for {
		if code := a.call(t, "GET", "/api/v1/runs/"+started.ID, nil, &r); code != 200 {
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
			ready := true
			for _, d := range c.DependsOn {
				ready = ready && done[d]
			}
			switch {
			case c.Status == "Review":
				if code := a.call(t, "POST", "/api/v1/runs/"+r.ID+"/cards/"+c.Handle+"/review", map[string]string{"user": "alice", "decision": "accept"}, nil); code != 200 {
					t.Fatalf("accept %s: %d", c.Handle, code)
				}
			case c.Runner == "" && c.Status != "Done" && ready:
				if code := a.call(t, "PATCH", "/api/v1/cards/"+c.Handle, map[string]string{"user": "alice", "status": "Done"}, nil); code != 200 {
					t.Fatalf("move %s: %d", c.Handle, code)
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r.State != "done" {
		t.Fatalf("run ended %s", r.State)
	}
	waitFor(t, browser, "every task complete and the edition", `[...document.querySelectorAll('[data-testid=run-task]')].every(t => t.dataset.status === 'complete') && !!document.querySelector('[data-testid=edition-link]') && document.querySelector('[data-testid=run-summary]').innerText.includes('10 of 10')`)
	if n := browse(t, browser, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=run-progress]').length`)); n != 1 {
		t.Errorf("%d run panels, want one kept up to date", n)
	}
	if href := browse(t, browser, chromedp.Evaluate[string](`document.querySelector('[data-testid=edition-link]').href`)); href != r.URL {
		t.Errorf("edition link %q, want %q", href, r.URL)
	}
	shot("console-run-done.png")
}
