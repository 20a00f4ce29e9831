package systemtest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bobnet/bobnet/web/webtest"
)

// reviewJSON is the review a console reply carries.
type reviewJSON struct {
	RunID    string `json:"run_id"`
	CardID   string `json:"card_id"`
	Handle   string `json:"handle"`
	Round    int    `json:"round"`
	Decision string `json:"decision"`
	By       string `json:"by"`
	Reason   string `json:"reason"`
}

// TestConsoleReviewButtons: in a console channel a run's card reaching
// Review is announced with the card it names, and the runs API the
// console's buttons call decides it, the decision announced with it too;
// then, in the browser, Send back with a reason and Accept on the next
// card's announcements decide it, and the buttons give way to who decided.
func TestConsoleReviewButtons(t *testing.T) {
	t.Parallel()
	a := start(t)
	events := a.events(t, "newsroom")
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
	if code := a.call(t, "POST", "/api/v1/boards/"+approved.BoardID+"/runs", map[string]string{"user": "alice"}, nil); code != http.StatusCreated {
		t.Fatalf("start run: %d", code)
	}
	nextReview := func(decided bool) reviewJSON {
		t.Helper()
		timeout := time.After(60 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatal("event stream ended")
				}
				var r struct {
					Text   string
					Review *reviewJSON
				}
				_ = json.Unmarshal(ev.Data, &r)
				if ev.Type == "reply" && r.Review != nil && (r.Review.Decision != "") == decided {
					return *r.Review
				}
			case <-timeout:
				t.Fatalf("no review reply (decided %v)", decided)
			}
		}
	}
	ann := nextReview(false)
	if ann.Handle != "NEWS-1" || ann.RunID == "" || ann.CardID == "" || ann.Round != 0 {
		t.Fatalf("announcement: %+v", ann)
	}
	path := "/api/v1/runs/" + ann.RunID + "/cards/" + ann.CardID + "/review"
	var refused struct{ Error string }
	if code := a.call(t, "POST", path, map[string]string{"user": "mallory", "decision": "accept"}, &refused); code != http.StatusForbidden {
		t.Fatalf("a stranger's accept: %d %+v", code, refused)
	}
	if code := a.call(t, "POST", path, map[string]string{"user": "alice", "decision": "accept"}, nil); code != http.StatusOK {
		t.Fatalf("accept: %d", code)
	}
	if got := nextReview(true); got.CardID != ann.CardID || got.Decision != "accepted" || got.By != "alice" {
		t.Fatalf("decision: %+v", got)
	}

	// The researchers come next: one is sent back and then accepted in
	// the browser.
	browser := webtest.Browser(t)
	if err := chromedp.Do(browser, chromedp.Navigate(a.URL+"/")); err != nil {
		t.Fatal(err)
	}
	browse(t, browser, chromedp.Evaluate[bool](`localStorage.setItem('bobnet.user', 'alice'); true`))
	if err := chromedp.Do(browser, chromedp.Navigate(a.URL+"/c/newsroom")); err != nil {
		t.Fatal(err)
	}
	const open = `[...document.querySelectorAll('[data-testid=review]')].filter(m => m.querySelector('[data-testid=review-accept]') && m.innerText.includes('NEWS-2'))`
	waitRun(t, browser, "NEWS-2 announced with buttons", open+`.length === 1`)
	waitFor(t, browser, "NEWS-1 decided on the page", `[...document.querySelectorAll('[data-testid=review]')].some(m => m.innerText.includes('NEWS-1') && m.querySelector('[data-testid=review-state]') && m.innerText.includes('Accepted by alice'))`)
	browse(t, browser, chromedp.Evaluate[bool](open+`[0].querySelector('[data-testid=review-sendback]').click(); true`))
	waitFor(t, browser, "reason field", `!!document.querySelector('[data-testid=review-reason]')`)
	if err := chromedp.Do(browser, chromedp.SendKeys(chromedp.CSS("[data-testid=review-reason]"), "cite the sources"),
		chromedp.Click(chromedp.CSS("[data-testid=review-send]"))); err != nil {
		t.Fatal(err)
	}
	waitRun(t, browser, "sent back on the page", `[...document.querySelectorAll('[data-testid=review-state]')].some(s => s.textContent.includes('Sent back by alice: “cite the sources”'))`)
	// Worked again with the reason, announced again: Accept.
	waitRun(t, browser, "NEWS-2 announced again", open+`.length === 1`)
	browse(t, browser, chromedp.Evaluate[bool](open+`[0].querySelector('[data-testid=review-accept]').click(); true`))
	waitRun(t, browser, "accepted on the page", `[...document.querySelectorAll('[data-testid=review]')].filter(m => m.innerText.includes('NEWS-2') && m.innerText.includes('Accepted by alice')).length === 1`)
	var run runJSON
	if code := a.call(t, "GET", "/api/v1/runs/"+ann.RunID, nil, &run); code != http.StatusOK {
		t.Fatalf("run: %d", code)
	}
	for _, c := range run.Cards {
		if c.Handle == "NEWS-2" && c.Status != "Done" {
			t.Errorf("NEWS-2 is %s", c.Status)
		}
	}
	if text := browse(t, browser, chromedp.Evaluate[string](`document.body.innerText`)); strings.Contains(text, "did not work") {
		t.Errorf("the page shows an error: %s", text)
	}
}

// waitRun is waitFor for what waits on a run's workers and the model,
// which take longer than a page's redraw when the machine is busy.
func waitRun(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	t.Fatalf("timed out waiting for %s; page says:\n%s", what, text)
}
