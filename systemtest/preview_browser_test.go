package systemtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/web/webtest"
)

// changePlan is the model's answer to "mark the research cards done and
// add a fact-check step" on the newspaper board.
const changePlan = `{"kind":"propose_actions","answer":"Research marked done; a fact-check step added.","confidence":0.9,"actions":[
  {"type":"update_card","card":"NEWS-1","status":"Done"},
  {"type":"update_card","card":"NEWS-2","status":"Done"},
  {"type":"update_card","card":"NEWS-3","status":"Done"},
  {"type":"update_card","card":"NEWS-4","status":"Done"},
  {"type":"create_card","cards":[{"temp_id":"fact_check","title":"Fact-check the research","body":"Check every claim against two sources.","assignee":"Reviewer","status":"Ready"}]},
  {"type":"add_links","links":[{"card":"fact_check","depends_on":"NEWS-2"},{"card":"NEWS-5","depends_on":"fact_check"}]}
]}`

// TestConsolePreviewShowsWhatIsApproved checks the console preview: card
// bodies, labelled assignee, status and workspace mode with the modes
// explained, revise feedback as a channel message, "no changes" when a
// revision changed nothing, and a proposal to change the board as a list
// of changes against it.
func TestConsolePreviewShowsWhatIsApproved(t *testing.T) {
	t.Parallel()
	ctx := webtest.Browser(t)
	a := start(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/c/previews"), chromedp.WaitVisible(chromedp.CSS("#text"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the event stream", `document.getElementById('conn').textContent.includes('connected')`)
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS("#user"), "alice"),
		chromedp.SendKeys(chromedp.CSS("#text"), "plan our daily research newspaper"),
		chromedp.Click(chromedp.CSS("#send")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the preview", `document.querySelectorAll('[data-testid=preview] [data-testid=preview-card]').length === 10`)
	bodies := browse(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=preview] [data-testid=card-body]').length`))
	text := browse(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid=preview]').innerText`))
	if bodies != 10 {
		t.Errorf("%d card bodies shown, want 10", bodies)
	}
	for _, want := range []string{"Assignee: Planner", "Status: Ready", "Workspace: Direct", "Workspace: Scratch", "Workspace mode says where a card's work happens", "Acceptance criteria:"} {
		if !strings.Contains(text, want) {
			t.Errorf("preview lacks %q", want)
		}
	}

	// Revise: the feedback shows as a message; the model answered the
	// same plan, so the new version says nothing changed.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("[data-testid=revise]"))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("[data-testid=feedback]"), "give the design QA to a Coder"), chromedp.Click(chromedp.CSS("[data-testid=send-feedback]"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the feedback message", `[...document.querySelectorAll('[data-testid=feedback-message]')].some(m => m.innerText.includes('give the design QA to a Coder') && m.innerText.includes('alice · feedback'))`)
	waitFor(t, ctx, "the second version", `document.querySelectorAll('[data-testid=preview]').length === 2`)
	changes := browse(t, ctx, chromedp.Evaluate[string](`document.querySelectorAll('[data-testid=preview]')[1].querySelector('[data-testid=changes]').innerText`))
	if !strings.Contains(changes, "No changes since v1 — try rephrasing") {
		t.Errorf("changes = %q", changes)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid=preview]:last-of-type [data-testid=approve]`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the board link", `!!document.querySelector('[data-testid=board-link]')`)

	// A proposal to change the board lists its changes against it.
	a.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: changePlan} })
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#text"), "mark the research cards done and add a fact-check step"), chromedp.Click(chromedp.CSS("#send"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the change preview", `!!document.querySelector('[data-testid=board-changes]')`)
	list := browse(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid=board-changes]').innerText`))
	for _, want := range []string{"Changes to the board (now → after approval):", "NEWS-1 “Define daily topic and source policy”: status Ready → Done",
		"NEWS-5 “Synthesize the edition as editor” will wait on fact_check “Fact-check the research (new)”"} {
		if !strings.Contains(list, want) {
			t.Errorf("board changes lack %q:\n%s", want, list)
		}
	}
	if dir := os.Getenv("BOBNET_SCREENSHOTS"); dir != "" {
		browse(t, ctx, chromedp.Evaluate[bool](`[...document.querySelectorAll('[data-testid=preview]')].pop().scrollIntoView(); true`))
		_ = os.WriteFile(filepath.Join(dir, "console-change-preview.png"), browse(t, ctx, chromedp.CaptureScreenshot()), 0o644)
	}
	newCards := browse(t, ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('[data-testid=preview]')].pop().innerText`))
	if !strings.Contains(newCards, "New cards for this channel's board") || !strings.Contains(newCards, "Fact-check the research") {
		t.Errorf("the new card is not shown:\n%s", newCards)
	}
}
