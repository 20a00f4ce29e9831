package systemtest

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/signing"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
	"github.com/bobnet/bobnet/web/webtest"
)

// slackSink is a Slack Web API that says ok to everything and keeps the
// messages posted.
type slackSink struct {
	srv  *httptest.Server
	mu   sync.Mutex
	sent []url.Values
}

func newSlackSink(t *testing.T) *slackSink {
	s := &slackSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		s.mu.Lock()
		s.sent = append(s.sent, r.PostForm)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true,"channel":"C_NEWS","ts":"1700000000.000100"}`))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// slashCommand runs a signed /bobnet command and returns Slack's answer.
func slashCommand(t *testing.T, a *testApp, user, text string) string {
	t.Helper()
	body := url.Values{"command": {"/bobnet"}, "text": {text}, "channel_id": {"C_NEWS"}, "user_id": {user}}.Encode()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequest("POST", a.URL+"/slack/commands", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", signing.SlackSignature("shh", ts, []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Text   string
		Blocks []json.RawMessage
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	for _, b := range r.Blocks {
		r.Text += "\n" + string(b)
	}
	return r.Text
}

type cardJSON struct {
	ID, Handle, Title, Status, Assignee string
	Version                             int
}

func boardCards(t *testing.T, a *testApp, id board.ID) map[string]cardJSON {
	t.Helper()
	var b struct{ Cards []cardJSON }
	if code := a.call(t, "GET", "/api/v1/boards/"+string(id), nil, &b); code != http.StatusOK {
		t.Fatalf("GET board: %d", code)
	}
	out := map[string]cardJSON{}
	for _, c := range b.Cards {
		out[c.Handle] = c
	}
	return out
}

// boardEvents reads GET /api/v1/boards/{id}/events.
func boardEvents(t *testing.T, a *testApp, id board.ID) <-chan board.CardEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", a.URL+"/api/v1/boards/"+string(id)+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := contractClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("board events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan board.CardEvent, 100)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev board.CardEvent
				if json.Unmarshal([]byte(data), &ev) == nil {
					out <- ev
				}
			}
		}
	}()
	return out
}

// TestMoveCardsEverywhere moves cards of one board from the REST API,
// Slack and the board page in Chromium, and checks each move shows in the
// others, in /bobnet status, on the live event stream and in the audit.
func TestMoveCardsEverywhere(t *testing.T) {
	t.Parallel()
	browser := webtest.Browser(t)
	sink := newSlackSink(t)
	a := start(t, withEnv(map[string]string{
		"BOBNET_API_TOKEN": "test-token", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "shh", "SLACK_API_URL": sink.srv.URL + "/api/",
	}))
	ctx := context.Background()

	// The newspaper board, approved in the console and shared with a
	// Slack channel.
	var sub struct {
		RequestID string `json:"request_id"`
	}
	if code := a.call(t, "POST", "/api/v1/channels/newsroom/messages", map[string]string{"user": "alice", "text": "plan our daily research newspaper"}, &sub); code != http.StatusAccepted {
		t.Fatalf("post message: %d", code)
	}
	req := a.waitRequest(t, sub.RequestID)
	var approved struct {
		BoardID board.ID `json:"board_id"`
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+req.ProposalID+"/approve", map[string]string{"user": "alice"}, &approved); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	id := approved.BoardID
	store, err := store.Open(ctx, a.DB, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.BindChannel(ctx, "slack:C_NEWS", id); err != nil {
		t.Fatal(err)
	}
	events := boardEvents(t, a, id)
	cards := boardCards(t, a, id)

	// The API: NEWS-1 starts. A card waiting on it cannot.
	var moved cardJSON
	if code := a.call(t, "PATCH", "/api/v1/cards/"+cards["NEWS-1"].ID, map[string]any{"user": "alice", "status": "In Progress"}, &moved); code != http.StatusOK || moved.Status != "In Progress" || moved.Version != 2 {
		t.Fatalf("PATCH: %d %+v", code, moved)
	}
	var refused struct {
		Error     string
		BlockedBy []cardJSON `json:"blocked_by"`
	}
	if code := a.call(t, "PATCH", "/api/v1/cards/"+cards["NEWS-2"].ID, map[string]any{"user": "alice", "status": "in progress"}, &refused); code != http.StatusConflict || len(refused.BlockedBy) != 1 || refused.BlockedBy[0].Handle != "NEWS-1" {
		t.Fatalf("early start: %d %+v", code, refused)
	}
	var stale struct{ Error string }
	if code := a.call(t, "PATCH", "/api/v1/cards/"+cards["NEWS-1"].ID, map[string]any{"user": "alice", "title": "x", "version": 1}, &stale); code != http.StatusConflict || !strings.Contains(stale.Error, "version 2, not 1") {
		t.Fatalf("stale version: %d %+v", code, stale)
	}

	// Slack sees it, and finishes it.
	if text := slashCommand(t, a, "U_BOB", "status"); !strings.Contains(text, "In Progress *1*") {
		t.Fatalf("slack status after the API move: %q", text)
	}
	if text := slashCommand(t, a, "U_BOB", "move NEWS-1 done"); !strings.Contains(text, "moved from In Progress to Done by <@U_BOB>") {
		t.Fatalf("slack move: %q", text)
	}
	if c := boardCards(t, a, id)["NEWS-1"]; c.Status != "Done" {
		t.Fatalf("API after the Slack move: %+v", c)
	}

	// The page, signed in as the console keeps it, shows both moves and
	// moves NEWS-2 itself.
	page := a.URL + "/boards/" + string(id)
	if err := chromedp.Do(browser, chromedp.Navigate(a.URL+"/")); err != nil {
		t.Fatal(err)
	}
	browse(t, browser, chromedp.Evaluate[bool](`localStorage.setItem('bobnet.user', 'carol'); localStorage.setItem('bobnet.token', 'test-token'); true`))
	if err := chromedp.Do(browser, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#board-name"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, browser, "the live stream", `document.body.dataset.live === 'yes'`)
	if st := browse(t, browser, chromedp.Evaluate[string](`document.getElementById('`+cards["NEWS-1"].ID+`').closest('section').dataset.status`)); st != "Done" {
		t.Fatalf("page shows NEWS-1 in %s", st)
	}
	browse(t, browser, chromedp.Evaluate[bool](`window.notReloaded = true; true`))
	if err := chromedp.Do(browser, chromedp.Click(chromedp.CSS(`#`+cards["NEWS-2"].ID+` details.move summary`)), chromedp.Click(chromedp.CSS(`#`+cards["NEWS-2"].ID+` button[data-move="In Progress"]`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, browser, "NEWS-2 in the In Progress column", `document.getElementById('`+cards["NEWS-2"].ID+`').closest('section').dataset.status === 'In Progress'`)
	if c := boardCards(t, a, id)["NEWS-2"]; c.Status != "In Progress" {
		t.Fatalf("API after the page move: %+v", c)
	}
	if text := slashCommand(t, a, "U_BOB", "status"); !strings.Contains(text, "In Progress *1*") || !strings.Contains(text, "Done *1*") {
		t.Fatalf("slack status after the page move: %q", text)
	}
	// Keyboard: focus a move button and press Enter. The redraw that
	// move asks for is held until someone has tabbed to another card:
	// when it lands, focus stays on the card they chose (it used to go
	// back to the card that had focus when the redraw was asked for, and
	// an Enter then moved that card).
	browse(t, browser, chromedp.Evaluate[bool](`(function () {
  const real = window.fetch;
  window.held = null;
  window.fetch = function (url, opts) {
    if (!window.released && opts && opts.headers && opts.headers.Accept === 'text/html') {
      return new Promise(function (resolve) { window.held = function () { resolve(real(url, opts)); }; });
    }
    return real(url, opts);
  };
  return true;
})()`))
	blocked := `document.getElementById('` + cards["NEWS-3"].ID + `').closest('section').dataset.status === 'Blocked'`
	// A redraw still on its way may replace the button.
	openMoveMenu(t, browser, cards["NEWS-3"].ID)
	doRedrawn(t, browser, chromedp.Focus(chromedp.CSS(`#`+cards["NEWS-3"].ID+` button[data-move="Blocked"]`)), chromedp.KeyEvent("\r"))
	waitFor(t, browser, "the redraw to be asked for", `window.held !== null`)
	news4Ready := `#` + cards["NEWS-4"].ID + ` button[data-move="Ready"]`
	openMoveMenu(t, browser, cards["NEWS-4"].ID)
	if err := chromedp.Do(browser, chromedp.Focus(chromedp.CSS(news4Ready))); err != nil {
		t.Fatal(err)
	}
	browse(t, browser, chromedp.Evaluate[bool](`window.released = true; window.held(); true`))
	waitFor(t, browser, "NEWS-3 blocked by keyboard", blocked)
	if got := browse(t, browser, chromedp.Evaluate[string](`(function () { const a = document.activeElement; const c = a && a.closest('article.card'); return (c ? c.id : '') + ' ' + (a.dataset.move || a.tagName); })()`)); got != cards["NEWS-4"].ID+" Ready" {
		t.Errorf("after the redraw focus is on %q; want NEWS-4's Ready button (%s Ready)", got, cards["NEWS-4"].ID)
	}

	// A move elsewhere appears on the open page without a reload.
	if code := a.call(t, "PATCH", "/api/v1/cards/"+cards["NEWS-2"].ID, map[string]any{"user": "dave", "status": "Review"}, nil); code != http.StatusOK {
		t.Fatalf("PATCH review: %d", code)
	}
	waitFor(t, browser, "NEWS-2 in Review, live", `document.getElementById('`+cards["NEWS-2"].ID+`').closest('section').dataset.status === 'Review'`)
	if !browse(t, browser, chromedp.Evaluate[bool](`window.notReloaded === true`)) {
		t.Error("the page reloaded instead of updating live")
	}
	notice := browse(t, browser, chromedp.Evaluate[string](`document.getElementById('notice').textContent`))
	if !strings.Contains(notice, "NEWS-2 changed by dave (api)") {
		t.Errorf("live notice = %q", notice)
	}

	// The event stream carried every move, and the audit has one row for
	// each, saying who, from where, before and after.
	want := []string{"alice api NEWS-1 Ready→In Progress", "U_BOB slack NEWS-1 In Progress→Done", "carol page NEWS-2 Backlog→In Progress", "carol page NEWS-3 Backlog→Blocked", "dave api NEWS-2 In Progress→Review"}
	for i, w := range want {
		select {
		case ev := <-events:
			got := ev.Actor + " " + ev.Via + " " + ev.Card.Handle + " " + ev.Changes[0].From + "→" + ev.Changes[0].To
			if got != w {
				t.Errorf("event %d = %q, want %q", i, got, w)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("event %d (%s) never came", i, w)
		}
	}
	audit, err := store.Audit(ctx, board.AuditFilter{BoardID: id})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, e := range audit {
		if e.Action != "card_changed" {
			continue
		}
		var d struct {
			Handle  string
			Via     string
			Changes []board.FieldChange
		}
		_ = json.Unmarshal(e.Detail, &d)
		rows = append(rows, e.Actor+" "+d.Via+" "+d.Handle+" "+d.Changes[0].From+"→"+d.Changes[0].To)
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}

	// After a keyboard move focus stays on the moved card itself, not on
	// another of its buttons, where a second Enter would move it again.
	n3 := "#" + cards["NEWS-3"].ID
	openMoveMenu(t, browser, cards["NEWS-3"].ID)
	doRedrawn(t, browser, chromedp.Focus(chromedp.CSS(n3+` button[data-move="Backlog"]`)), chromedp.KeyEvent("\r"))
	waitFor(t, browser, "NEWS-3 back in Backlog, with focus on the card", `document.getElementById('`+cards["NEWS-3"].ID+`').closest('section').dataset.status === 'Backlog' && document.activeElement === document.getElementById('`+cards["NEWS-3"].ID+`')`)

	// An acceptance criterion marked done on the page, by keyboard. The
	// redraws of the move above may still be landing: the description is
	// opened first (a redraw keeps it open), then the button is pressed.
	n1 := "#" + cards["NEWS-1"].ID
	doRedrawn(t, browser, chromedp.Click(chromedp.CSS(n1+" summary")))
	waitFor(t, browser, "NEWS-1's description open", `document.querySelector('`+n1+` details').open`)
	doRedrawn(t, browser, chromedp.Focus(chromedp.CSS(n1+` button[data-criterion="0"]`)), chromedp.KeyEvent("\r"))
	waitFor(t, browser, "the criterion marked done", `document.querySelector('`+n1+` li').classList.contains('done') && document.querySelector('`+n1+` details').open`)
	c1, err := store.Card(ctx, board.CardID(cards["NEWS-1"].ID))
	if err != nil || len(c1.CriteriaDone) != 1 || c1.CriteriaDone[0] != 0 {
		t.Fatalf("criteria done = %v, %v", c1.CriteriaDone, err)
	}
}

// openMoveMenu opens a card's "Move to" menu (a redraw keeps it open), as
// a person does before choosing where the card goes.
func openMoveMenu(t *testing.T, browser context.Context, cardID string) {
	t.Helper()
	waitFor(t, browser, "the move menu of "+cardID, `(function () { const d = document.querySelector('#`+cardID+` details.move'); if (!d || d.hidden) { return false; } d.open = true; return true; })()`)
}
