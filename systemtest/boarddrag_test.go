package systemtest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/web/webtest"
)

// dragReport is what a column shows while a card is dragged over the page.
type dragReport struct {
	Refused, OK, NoteShown bool
	Note                   string
}

// dragTo starts dragging a card and reports what the column of status
// shows; with drop it drops the card there and ends the drag, as a mouse
// does (the browser's drag events, dispatched by the test).
func dragTo(t *testing.T, browser context.Context, cardID, status string, drop bool) dragReport {
	t.Helper()
	js := `(function () {
  const card = document.getElementById('` + cardID + `');
  const col = document.querySelector('section.column[data-status="` + status + `"]');
  const dt = new DataTransfer();
  card.dispatchEvent(new DragEvent('dragstart', {bubbles: true, dataTransfer: dt}));
  const note = col.querySelector('.drop-note');
  const out = {Refused: col.classList.contains('drop-refused'), OK: col.classList.contains('drop-ok'),
    NoteShown: getComputedStyle(note).display !== 'none', Note: note.textContent};
  if (` + map[bool]string{true: "true", false: "false"}[drop] + `) {
    const target = col.querySelector('.stack');
    target.dispatchEvent(new DragEvent('dragover', {bubbles: true, cancelable: true, dataTransfer: dt}));
    target.dispatchEvent(new DragEvent('drop', {bubbles: true, cancelable: true, dataTransfer: dt}));
  }
  card.dispatchEvent(new DragEvent('dragend', {bubbles: true, dataTransfer: dt}));
  return JSON.stringify(out);
})()`
	var rep dragReport
	if err := json.Unmarshal([]byte(browse(t, browser, chromedp.Evaluate[string](js))), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestDragCardsOnTheBoardPage: a signed-in person drags cards between
// columns. While dragging, a column the dependency rule refuses says why
// and takes no drop; a drop on an allowed column moves the card through the
// API, as the "Move to" menu does.
func TestDragCardsOnTheBoardPage(t *testing.T) {
	t.Parallel()
	browser := webtest.Browser(t)
	a := start(t, withEnv(map[string]string{"BOBNET_API_TOKEN": "test-token"}))
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
	cards := boardCards(t, a, approved.BoardID)
	if err := chromedp.Do(browser, chromedp.Navigate(a.URL+"/")); err != nil {
		t.Fatal(err)
	}
	browse(t, browser, chromedp.Evaluate[bool](`localStorage.setItem('bobnet.user', 'carol'); localStorage.setItem('bobnet.token', 'test-token'); true`))
	if err := chromedp.Do(browser, chromedp.Navigate(a.URL+"/boards/"+string(approved.BoardID)), chromedp.WaitVisible(chromedp.CSS("#board-name"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, browser, "the live stream", `document.body.dataset.live === 'yes'`)
	if !browse(t, browser, chromedp.Evaluate[bool](`document.getElementById('`+cards["NEWS-2"].ID+`').draggable`)) {
		t.Fatal("cards are not draggable for a signed-in person")
	}

	// NEWS-2 waits on NEWS-1: In Progress refuses it and says why.
	news2 := cards["NEWS-2"].ID
	rep := dragTo(t, browser, news2, "In Progress", true)
	if !rep.Refused || rep.OK || !rep.NoteShown || !strings.Contains(rep.Note, "NEWS-2 can't move here: waits on NEWS-1") {
		t.Errorf("a refused column while dragging NEWS-2: %+v", rep)
	}
	if c := boardCards(t, a, approved.BoardID)["NEWS-2"]; c.Status != "Backlog" {
		t.Fatalf("a drop on a refused column moved NEWS-2 to %s", c.Status)
	}
	if browse(t, browser, chromedp.Evaluate[bool](`document.body.classList.contains('dragging') || document.querySelector('.drop-refused, .drop-ok') !== null`)) {
		t.Error("the drag left its marks on the page after it ended")
	}

	// NEWS-1 has no dependencies: dropped on In Progress, it moves there.
	news1 := cards["NEWS-1"].ID
	if rep := dragTo(t, browser, news1, "In Progress", true); !rep.OK || rep.Refused {
		t.Errorf("an allowed column while dragging NEWS-1: %+v", rep)
	}
	waitFor(t, browser, "NEWS-1 in the In Progress column", `document.getElementById('`+news1+`').closest('section').dataset.status === 'In Progress'`)
	if c := boardCards(t, a, approved.BoardID)["NEWS-1"]; c.Status != "In Progress" {
		t.Fatalf("API after the drop: %+v", c)
	}
	// Signed out, nothing can be dragged.
	browse(t, browser, chromedp.Evaluate[bool](`localStorage.removeItem('bobnet.user'); true`))
	if err := chromedp.Do(browser, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#board-name"))); err != nil {
		t.Fatal(err)
	}
	if browse(t, browser, chromedp.Evaluate[bool](`document.querySelector('article.card').draggable`)) {
		t.Error("cards are draggable for someone not signed in")
	}
}
