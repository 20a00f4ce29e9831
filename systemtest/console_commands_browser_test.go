package systemtest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bobnet/bobnet/web/webtest"
)

// TestConsoleCommandsInBrowser: a console message starting with
// "/bobnet " is a chat command, answered by the engine's grammar in the
// channel at once; the message box is cleared as for any message.
func TestConsoleCommandsInBrowser(t *testing.T) {
	t.Parallel()
	ctx := webtest.Browser(t)
	a := start(t)

	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/c/commands"), chromedp.WaitVisible(chromedp.CSS("#text"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the event stream", `document.getElementById('conn').textContent.includes('connected')`)
	say := func(text string, replies int) string {
		t.Helper()
		if err := chromedp.Do(ctx,
			chromedp.SetValue(chromedp.CSS("#user"), "alice"),
			chromedp.SendKeys(chromedp.CSS("#text"), text),
			chromedp.Click(chromedp.CSS("#send")),
		); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the answer to "+text, `document.querySelectorAll('[data-testid=reply]').length === `+strconv.Itoa(replies))
		waitFor(t, ctx, "the cleared message box", `document.getElementById('text').value === ''`)
		return browse(t, ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('[data-testid=reply]')].pop().innerText`))
	}
	if got := say("/bobnet next", 1); !strings.Contains(got, "This channel has no board yet. Mention me with what you want planned, and approve the preview.") {
		t.Errorf("/bobnet next in a channel without a board answers %q", got)
	}
	help := say("/bobnet help", 2)
	for _, want := range []string{"/bobnet status [board id]", "/bobnet move <card> <status>", "/bobnet help — shows this."} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	if strings.Contains(help, "leave") {
		t.Errorf("the console's help lists Matrix's leave:\n%s", help)
	}
	if n := browse(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('.msg.user').length`)); n != 2 {
		t.Errorf("%d messages shown, want the 2 commands", n)
	}
}
