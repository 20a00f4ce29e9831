package systemtest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
	"github.com/bobnet/bobnet/web/webtest"
)

// TestReviewsCannotBeSkippedThroughTheAPI: under self_approval: false the
// run's starter cannot move their own run's card out of Review with the
// API's PATCH, as a client or as the board page's drag sends it, and
// neither can a write token bound to someone who does not decide: each
// answers 409 naming the review route and the chat commands, the card
// stays in Review, and the run goes on; a decider's review moves it.
func TestReviewsCannotBeSkippedThroughTheAPI(t *testing.T) {
	t.Parallel()
	a := start(t, withEnv(map[string]string{"BOBNET_API_TOKEN": "tok-boot"}))
	ctx := context.Background()
	_, run, id := runToReview(t, a)
	cardIn := func(handle string) (string, string) { return runCard(t, a, run.ID, handle) }
	db, err := store.Open(ctx, a.DB, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	carol, err := apitoken.NewTokens(db).Create(ctx, "carol-writes", []apitoken.Scope{apitoken.ScopeRead, apitoken.ScopeWrite}, "carol")
	if err != nil {
		t.Fatal(err)
	}
	review := "/api/v1/runs/" + run.ID + "/cards/NEWS-1/review"
	for _, tc := range []struct {
		name, token, path string
		body              map[string]any
	}{
		{"the starter's PATCH", "tok-boot", "/api/v1/cards/NEWS-1", map[string]any{"user": "alice", "status": "Done"}},
		{"the starter's PATCH by id", "tok-boot", "/api/v1/cards/" + id, map[string]any{"user": "alice", "status": "Ready"}},
		{"the board page's drag", "tok-boot", "/api/v1/cards/" + id, map[string]any{"user": "alice", "status": "Done", "via": "page"}},
		{"a write token of a non-decider", carol, "/api/v1/cards/NEWS-1", map[string]any{"user": "carol", "status": "Done"}},
	} {
		a.token = tc.token
		var out struct {
			Error  string
			Review struct {
				Path     string
				Commands []string
			}
		}
		if code := a.call(t, "PATCH", tc.path, tc.body, &out); code != http.StatusConflict {
			t.Fatalf("%s: %d %+v, want 409", tc.name, code, out)
		}
		if out.Review.Path != review || len(out.Review.Commands) != 2 || out.Review.Commands[0] != "accept NEWS-1" ||
			!strings.Contains(out.Error, review) || !strings.Contains(out.Error, "sendback NEWS-1 <why>") {
			t.Errorf("%s: %+v", tc.name, out)
		}
		if _, st := cardIn("NEWS-1"); st != "Review" {
			t.Fatalf("%s: NEWS-1 is %s, want Review", tc.name, st)
		}
	}
	a.token = "tok-boot"
	if code := a.call(t, "POST", review, map[string]string{"user": "alice", "decision": "accept"}, nil); code != http.StatusForbidden {
		t.Fatalf("the starter's own review: %d, want 403", code)
	}
	var cur runJSON
	if code := a.call(t, "GET", "/api/v1/runs/"+run.ID, nil, &cur); code != http.StatusOK || cur.State != "running" {
		t.Fatalf("the run after the refused moves: %d %s", code, cur.State)
	}
	if code := a.call(t, "POST", review, map[string]string{"user": "bob", "decision": "accept"}, nil); code != http.StatusOK {
		t.Fatalf("bob's review: %d", code)
	}
	if _, st := cardIn("NEWS-1"); st != "Done" {
		t.Fatalf("after the review NEWS-1 is %s", st)
	}
}

// runToReview has alice ask for the newspaper in the console channel
// gate and approve it, puts the channel under self_approval: false with
// bob deciding, starts a run as alice and waits for NEWS-1 to reach
// Review. a's token must be an admin's.
func runToReview(t *testing.T, a *testApp) (boardID string, run runJSON, news1 string) {
	t.Helper()
	var sub struct {
		RequestID string `json:"request_id"`
	}
	if code := a.call(t, "POST", "/api/v1/channels/gate/messages", map[string]string{"user": "alice", "text": "plan our daily research newspaper"}, &sub); code != http.StatusAccepted {
		t.Fatalf("post message: %d", code)
	}
	req := a.waitRequest(t, sub.RequestID)
	var approved struct {
		BoardID string `json:"board_id"`
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+req.ProposalID+"/approve", map[string]string{"user": "alice"}, &approved); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	if code := a.call(t, "PUT", "/api/v1/policies/console:gate", map[string]any{"deciders": []string{"requester", "bob"}, "approvals": 1, "self_approval": false}, nil); code != http.StatusOK {
		t.Fatalf("put policy: %d", code)
	}
	if code := a.call(t, "POST", "/api/v1/boards/"+approved.BoardID+"/runs", map[string]string{"user": "alice"}, &run); code != http.StatusCreated {
		t.Fatalf("start run: %d", code)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		id, status := runCard(t, a, run.ID, "NEWS-1")
		if status == "Review" {
			return approved.BoardID, run, id
		}
		if time.Now().After(deadline) {
			t.Fatalf("NEWS-1 never reached Review (it is %s)", status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runCard is a card of a run: its id and status.
func runCard(t *testing.T, a *testApp, run, handle string) (id, status string) {
	t.Helper()
	var cur runJSON
	if code := a.call(t, "GET", "/api/v1/runs/"+run, nil, &cur); code != http.StatusOK {
		t.Fatalf("run: %d", code)
	}
	for _, c := range cur.Cards {
		if c.Handle == handle {
			return c.CardID, c.Status
		}
	}
	t.Fatalf("no %s in the run", handle)
	return "", ""
}

// TestDraggingACardInReviewOnTheBoardPage: the run's starter drags their
// own run's card from Review to Done on the board page: the page says it
// moves on only through its review, naming the commands, and the card
// stays in the Review column.
func TestDraggingACardInReviewOnTheBoardPage(t *testing.T) {
	t.Parallel()
	browser := webtest.Browser(t)
	a := start(t, withEnv(map[string]string{"BOBNET_API_TOKEN": "tok-boot"}))
	boardID, run, news1 := runToReview(t, a)
	if err := chromedp.Do(browser, chromedp.Navigate(a.URL+"/")); err != nil {
		t.Fatal(err)
	}
	browse(t, browser, chromedp.Evaluate[bool](`localStorage.setItem('bobnet.user', 'alice'); localStorage.setItem('bobnet.token', 'tok-boot'); true`))
	if err := chromedp.Do(browser, chromedp.Navigate(a.URL+"/boards/"+boardID), chromedp.WaitVisible(chromedp.CSS("#board-name"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, browser, "the live stream", `document.body.dataset.live === 'yes'`)
	waitFor(t, browser, "NEWS-1 in Review", `document.getElementById('`+news1+`').closest('section').dataset.status === 'Review'`)
	dragTo(t, browser, news1, "Done", true)
	waitFor(t, browser, "the refusal on the page", `document.getElementById('notice').textContent.includes('NEWS-1 waits for its review')`)
	notice := browse(t, browser, chromedp.Evaluate[string](`document.getElementById('notice').textContent`))
	for _, want := range []string{"/api/v1/runs/" + run.ID + "/cards/NEWS-1/review", "accept NEWS-1", "sendback NEWS-1 <why>"} {
		if !strings.Contains(notice, want) {
			t.Errorf("the page says %q, without %q", notice, want)
		}
	}
	if _, st := runCard(t, a, run.ID, "NEWS-1"); st != "Review" {
		t.Fatalf("after the drag NEWS-1 is %s", st)
	}
	if !browse(t, browser, chromedp.Evaluate[bool](`document.getElementById('`+news1+`').closest('section').dataset.status === 'Review'`)) {
		t.Error("the page shows NEWS-1 out of Review")
	}
}
