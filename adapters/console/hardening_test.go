package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/web/webtest"
)

// fakeEngine knows one proposal, p_okaaaaaaaaaaaaaa.
type fakeEngine struct{}

func (fakeEngine) Proposal(_ context.Context, id board.ProposalID) (board.Proposal, error) {
	if id != "p_okaaaaaaaaaaaaaa" {
		return board.Proposal{}, bot.ErrNotFound
	}
	return board.Proposal{ID: id, State: board.ProposalPending, RequestedBy: "alice"}, nil
}

// errMalformedReached is what the fake engines answer for an id the
// console should have refused before asking them.
var errMalformedReached = errors.New("the engine was asked about a malformed id")

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newServer serves the console's pages over eng.
func newServer(t *testing.T, eng Engine) (*Console, *httptest.Server) {
	t.Helper()
	c := New(eng, nil, discard())
	r := chi.NewRouter()
	c.PageRoutes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return c, srv
}

// Channels nobody watches are dropped past the cap, and leaving a channel
// never creates one.
func TestIdleChannelsArePruned(t *testing.T) {
	t.Parallel()
	c := New(fakeEngine{}, nil, discard())
	_, watched := c.subscribe("watched", 0)
	for i := range maxChannels + 100 {
		_ = c.Reply(context.Background(), board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: fmt.Sprint("ch", i)}}, board.Reply{Text: "x"})
	}
	c.unsubscribe("never-seen", make(chan Event))
	c.mu.Lock()
	n := len(c.channels)
	_, kept := c.channels["watched"]
	_, ghost := c.channels["never-seen"]
	c.mu.Unlock()
	if n > maxChannels || !kept || ghost {
		t.Fatalf("channels = %d (cap %d), watched kept %v, ghost %v", n, maxChannels, kept, ghost)
	}
	c.unsubscribe("watched", watched)
}

// The proposal page linked from chat needs no token and shows model text
// as text.
func TestProposalPageIsReadableAndInert(t *testing.T) {
	t.Parallel()
	eng := pageEngine{}
	_, srv := newServer(t, eng)
	resp, err := http.Get(srv.URL + "/proposals/p_pageaaaaaaaaaaaa")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	page := string(body)
	if strings.Contains(page, "<script>") || !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(page, "Write the intro") {
		t.Fatalf("page = %s", page)
	}
	for _, id := range []string{"p_nopeaaaaaaaaaaaa", "p_nope", "p_pageaaaaaaaaaaa%3F"} {
		if resp, _ := http.Get(srv.URL + "/proposals/" + id); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("unknown proposal %s: %d", id, resp.StatusCode)
		}
	}
}

// pageEngine knows one proposal, p_pageaaaaaaaaaaaa, whose answer is markup.
type pageEngine struct{}

func (pageEngine) Proposal(ctx context.Context, id board.ProposalID) (board.Proposal, error) {
	if _, err := board.ParseProposalID(string(id)); err != nil {
		return board.Proposal{}, errMalformedReached
	}
	if id != "p_pageaaaaaaaaaaaa" {
		return board.Proposal{}, bot.ErrNotFound
	}
	return board.Proposal{ID: id, State: board.ProposalPending, Version: 1, RequestedBy: "alice", ExpiresAt: time.Now().Add(time.Hour),
		Plan: plan.Envelope{Kind: plan.KindProposeActions, Answer: "<script>alert(1)</script>", Actions: []plan.Action{{
			Type: plan.ActionCreateBoardWithCards, Board: &plan.BoardDraft{Name: "News"},
			Cards: []plan.CardDraft{{TempID: "c1", Title: "Write the intro", Body: "b", Status: "Backlog"},
				{TempID: "c2", Title: "Research the second topic of the edition at length", Body: "b", Status: "Backlog"},
				{TempID: "c3", Title: "Edit", Body: "b", Status: "Backlog"}, {TempID: "c4", Title: "Publish", Body: "b", Status: "Backlog"}},
		}}}}, nil
}

// TestProposalPageNumbersStayInTheirCards: the page lays the cards out in
// columns; each card's number is drawn inside its own box, never over the
// column to its left.
func TestProposalPageNumbersStayInTheirCards(t *testing.T) {
	t.Parallel()
	ctx := webtest.Browser(t)
	_, srv := newServer(t, pageEngine{})
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/proposals/p_pageaaaaaaaaaaaa"), chromedp.WaitVisible(chromedp.CSS("ol.cards"))); err != nil {
		t.Fatal(err)
	}
	problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(function () {
  const out = [];
  const items = [...document.querySelectorAll('ol.cards > li')];
  if (items.length !== 4) out.push('cards shown: ' + items.length);
  const boxes = items.map(li => li.getBoundingClientRect());
  items.forEach((li, i) => {
    const cs = getComputedStyle(li);
    if (cs.listStyleType !== 'none' && cs.listStylePosition !== 'inside') out.push('card ' + (i + 1) + ': number drawn outside its box');
    const h = li.querySelector('h3').getBoundingClientRect();
    if (h.left < boxes[i].left || h.right > boxes[i].right + 1) out.push('card ' + (i + 1) + ': title outside its box');
    if (!getComputedStyle(li.querySelector('h3'), '::before').content.includes('counter')) out.push('card ' + (i + 1) + ': no number');
    boxes.forEach((b, j) => {
      if (j > i && b.left < boxes[i].right && boxes[i].left < b.right && b.top < boxes[i].bottom && boxes[i].top < b.bottom) out.push('cards ' + (i + 1) + ' and ' + (j + 1) + ' overlap');
    });
  });
  if (boxes.length > 1 && boxes[1].top !== boxes[0].top) out.push('cards are not laid out in columns at 1400 px');
  return out;
})()`))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// No page of the console can be framed by another site, /static/ (which
// serves the console's HTML too) included, and no response is sniffed
// into another type.
func TestPagesCannotBeFramed(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, fakeEngine{})
	for _, path := range []string{"/", "/c/general", "/static/", "/static/index.html", "/static/app.js", "/static/style.css", "/proposals/p_okaaaaaaaaaaaaaa", "/static/nope"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s (%d, %s): CSP %q, X-Frame-Options %q, X-Content-Type-Options %q", path, resp.StatusCode, h.Get("Content-Type"),
				h.Get("Content-Security-Policy"), h.Get("X-Frame-Options"), h.Get("X-Content-Type-Options"))
		}
		if path == "/static/" && (resp.StatusCode != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html")) {
			t.Errorf("/static/ is %d %s, not the console's HTML this test means", resp.StatusCode, h.Get("Content-Type"))
		}
	}
}

func TestHistoryBoundedAndSlowSubscriberDropped(t *testing.T) {
	t.Parallel()
	c := New(fakeEngine{}, nil, discard())
	_, sub := c.subscribe("general", 0)
	th := board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: "general"}}
	// Nobody reads sub: publishing far more than its buffer must not block.
	for i := 0; i < historySize+50; i++ {
		_ = c.Reply(context.Background(), th, board.Reply{Text: "x"})
	}
	past, _ := c.subscribe("general", 0)
	if len(past) != historySize {
		t.Fatalf("history holds %d events, want %d", len(past), historySize)
	}
	if past[0].ID != 51 {
		t.Fatalf("oldest kept event %d, want 51", past[0].ID)
	}
	n := 0
	for range sub { // closed once dropped
		n++
	}
	if n != cap(sub) {
		t.Fatalf("slow subscriber got %d events before being dropped, want %d", n, cap(sub))
	}
}
