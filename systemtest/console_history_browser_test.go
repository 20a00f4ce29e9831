package systemtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/store/storetest"
	"github.com/bobnet/bobnet/web/webtest"
)

// TestConsoleRemembersAcrossARestart: a conversation in the console, with a
// revision (sent with Enter) whose superseded version folds away, survives
// a restart of BobNet; the pending proposal is approved from the console
// afterwards, and the home lists the channel and the new board.
func TestConsoleRemembersAcrossARestart(t *testing.T) {
	t.Parallel()
	ctx := webtest.Browser(t)
	env := map[string]string{"DATABASE_URL": storetest.NewDatabase(t), "BOBNET_REDIS_PREFIX": bottest.Prefix()}
	first := start(t, withEnv(env))

	if err := chromedp.Do(ctx, chromedp.Navigate(first.URL+"/c/newsroom"), chromedp.WaitVisible(chromedp.CSS("#text"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the event stream", `document.getElementById('conn').textContent.includes('connected')`)
	// Enter sends; Shift+Enter makes a new line first.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS("#user"), "alice"),
		chromedp.SendKeys(chromedp.CSS("#text"), "plan our daily research newspaper"),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)),
		chromedp.SendKeys(chromedp.CSS("#text"), "with three researchers"),
	); err != nil {
		t.Fatal(err)
	}
	if v := browse(t, ctx, chromedp.Evaluate[string](`document.getElementById('text').value`)); v != "plan our daily research newspaper\nwith three researchers" {
		t.Fatalf("Shift+Enter: composer holds %q", v)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the first preview", `document.querySelectorAll('[data-testid=preview]').length === 1 && !!document.querySelector('[data-testid=revise]')`)

	// Revise, sending the feedback with Enter: v1 folds to its title.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("[data-testid=revise]")),
		chromedp.SendKeys(chromedp.CSS("[data-testid=feedback]"), "make the editor a Reviewer"),
		chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the second version", `document.querySelectorAll('[data-testid=preview]').length === 2`)
	waitFor(t, ctx, "v1 folded", `(function () {
  const v1 = document.querySelectorAll('[data-testid=preview]')[0];
  return v1.classList.contains('superseded') && v1.querySelector('.cards').offsetParent === null &&
    v1.querySelector('h3.board-name').offsetParent !== null && !!v1.querySelector('[data-testid=show-version]');
})()`)
	v2 := browse(t, ctx, chromedp.Evaluate[string](`document.querySelectorAll('[data-testid=preview]')[1].dataset.proposal`))

	// Restart BobNet on the same database and Redis.
	first.stop()
	second := start(t, withEnv(env))
	if err := chromedp.Do(ctx, chromedp.Navigate(second.URL+"/c/newsroom"), chromedp.WaitVisible(chromedp.CSS("#text"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the history after the restart", `document.querySelectorAll('[data-testid=preview]').length === 2 && document.querySelectorAll('.msg[data-testid=message]').length === 1 && document.querySelectorAll('.msg[data-testid=feedback-message]').length === 1`)
	if !browse(t, ctx, chromedp.Evaluate[bool](`document.querySelectorAll('[data-testid=preview]')[0].classList.contains('superseded')`)) {
		t.Error("after the restart v1 is not shown as superseded")
	}
	waitFor(t, ctx, "the home's channel", `[...document.querySelectorAll('[data-testid=home-channel]')].some(li => li.textContent.includes('#newsroom'))`)
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#user"), "alice"), chromedp.Click(chromedp.CSS(`[data-proposal="`+v2+`"] [data-testid=approve]`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the approval", `(document.querySelector('[data-proposal="`+v2+`"] [data-testid=proposal-state]') || {}).innerText.includes('Approved by alice')`)
	var p struct {
		State   string `json:"state"`
		BoardID string `json:"board_id"`
	}
	if code := second.call(t, "GET", "/api/v1/proposals/"+v2, nil, &p); code != 200 || p.State != "approved" || p.BoardID == "" {
		t.Fatalf("proposal after approving from the restarted console: %d %+v", code, p)
	}
	waitFor(t, ctx, "the home's board", `[...document.querySelectorAll('[data-testid=home-board]')].some(li => li.textContent.includes('Daily Research Newspaper') && li.textContent.includes('10 cards'))`)
	home := browse(t, ctx, chromedp.Evaluate[string](`document.getElementById('home').innerText`))
	if !strings.Contains(home, "#newsroom") {
		t.Errorf("home says %q", home)
	}
	if dir := os.Getenv("BOBNET_SCREENSHOTS"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "console-after-restart.png"), browse(t, ctx, chromedp.CaptureScreenshot()), 0o644)
	}
}
