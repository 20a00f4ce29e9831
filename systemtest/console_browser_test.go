package systemtest

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bobnet/bobnet/web/webtest"
)

// browse runs one browser action and fails the test on error.
func browse[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// doRedrawn runs steps, and again (up to five times in all) when they
// fail: a live redraw of the page may replace a node between finding it
// and acting on it.
func doRedrawn(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		err := chromedp.Do(ctx, steps...)
		if err == nil {
			return
		}
		if attempt == 4 {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitFor polls a JavaScript condition until it is true.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	t.Fatalf("timed out waiting for %s; page says:\n%s", what, text)
}

func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	ctx := webtest.Browser(t)
	a := start(t)

	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/c/newsroom"), chromedp.WaitVisible(chromedp.CSS("#text"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the event stream", `document.getElementById('conn').textContent.includes('connected')`)
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS("#user"), "alice"),
		chromedp.SendKeys(chromedp.CSS("#text"), "I want to create a kanban board that I can run once a day that will send researchers out and build a newspaper website."),
		chromedp.Click(chromedp.CSS("#send")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the preview", `document.querySelectorAll('[data-testid=preview] [data-testid=preview-card]').length === 10`)
	text := browse(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid=preview]').innerText`))
	for _, want := range []string{"Daily Research Newspaper", "Define daily topic and source policy", "Researcher", "Depends on:", "At least 5 source links captured.", "Assumptions:", "Approve and create"} {
		if !strings.Contains(text, want) {
			t.Errorf("preview lacks %q", want)
		}
	}
	shot := browse(t, ctx, chromedp.CaptureScreenshot())
	if img, err := png.Decode(bytes.NewReader(shot)); err != nil || img.Bounds().Dx() < 800 {
		t.Fatalf("screenshot: %v", err)
	}
	if dir := os.Getenv("BOBNET_SCREENSHOTS"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "console-preview.png"), shot, 0o644)
	}

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("[data-testid=approve]"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the board link", `!!document.querySelector('[data-testid=board-link]')`)
	state := browse(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid=proposal-state]').innerText`))
	if !strings.Contains(state, "Approved by alice") {
		t.Errorf("state = %q", state)
	}
	if n := browse(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=approve]').length`)); n != 0 {
		t.Errorf("approve button still there after approval")
	}
	href := browse(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid=board-link]').href`))
	if !strings.HasPrefix(href, a.URL+"/boards/b_") {
		t.Fatalf("board link = %q", href)
	}
	// The events that follow an approval (the decision, the reply in the
	// thread) redraw the proposal, and may replace the link.
	doRedrawn(t, ctx, chromedp.Click(chromedp.CSS("[data-testid=board-link]")))
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#board-name"))); err != nil {
		t.Fatal(err)
	}
	name := browse(t, ctx, chromedp.Text(chromedp.CSS("#board-name")))
	cards := browse(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('article.card').length`))
	if name != "Daily Research Newspaper" || cards != 10 {
		t.Fatalf("board page: %q with %d cards", name, cards)
	}
}
