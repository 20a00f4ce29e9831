package console

import (
	"context"
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
	"github.com/bobnet/bobnet/sse"
	"github.com/bobnet/bobnet/web/webtest"
)

func post(t *testing.T, url, contentType, body string, headers ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Varying the "user" and the channel does not get past the limit: it is
// kept per client (token or address), so 150 messages under 150 names
// are not 150 requests.
func TestLimitsKeyedOnTheCallerNotOnNames(t *testing.T) {
	t.Parallel()
	eng := &fakeEngine{}
	_, srv := newServer(t, eng)
	accepted, refused := 0, 0
	for i := range 150 {
		body := fmt.Sprintf(`{"user":"user%d","text":"plan %d"}`, i, i)
		switch post(t, fmt.Sprintf("%s/api/v1/channels/ch%d/messages", srv.URL, i), "application/json", body).StatusCode {
		case http.StatusAccepted:
			accepted++
		case http.StatusTooManyRequests:
			refused++
		}
	}
	if accepted != clientRequests || refused != 150-clientRequests {
		t.Fatalf("accepted %d, refused %d; want %d and the rest", accepted, refused, clientRequests)
	}
	// Another token is another client.
	if code := post(t, srv.URL+"/api/v1/channels/general/messages", "application/json", `{"user":"a","text":"hi"}`, "Authorization", "Bearer other").StatusCode; code != http.StatusAccepted {
		t.Fatalf("another client: %d", code)
	}
}

// A body that is not declared JSON is refused: forms and text/plain are
// what a web page may post across sites without asking.
func TestStateChangesNeedJSONContentType(t *testing.T) {
	t.Parallel()
	eng := &fakeEngine{}
	_, srv := newServer(t, eng)
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded"} {
		if code := post(t, srv.URL+"/api/v1/channels/general/messages", ct, `{"user":"a","text":"hi"}`).StatusCode; code != http.StatusUnsupportedMediaType {
			t.Errorf("content type %q: %d, want 415", ct, code)
		}
	}
	if len(eng.submits) != 0 {
		t.Fatalf("submitted %d", len(eng.submits))
	}
}

// Without a token, a request from another site's page (Origin) or through
// a rebound name (Host) is refused; BobNet's own page and plain clients
// are not.
func TestGuardRefusesCrossSiteAndRebinding(t *testing.T) {
	t.Parallel()
	eng := &fakeEngine{}
	c := New(eng, slog.New(slog.NewTextHandler(io.Discard, nil)))
	r := chi.NewRouter()
	r.Group(func(r chi.Router) {
		r.Use(Guard(GuardConfig{PublicURL: "http://127.0.0.1:8080", Listen: "127.0.0.1:8080", Tokenless: true}))
		c.APIRoutes(r)
	})
	send := func(method, path, host, origin string) int {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(`{"user":"a","text":"hi"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		return rec.Code
	}
	tests := []struct {
		name, method, path, host, origin string
		want                             int
	}{
		{"own page", "POST", "/api/v1/channels/general/messages", "127.0.0.1:8080", "http://127.0.0.1:8080", http.StatusAccepted},
		{"localhost", "POST", "/api/v1/channels/general/messages", "localhost:8080", "http://localhost:8080", http.StatusAccepted},
		{"curl", "POST", "/api/v1/channels/general/messages", "127.0.0.1:8080", "", http.StatusAccepted},
		{"another site", "POST", "/api/v1/channels/general/messages", "127.0.0.1:8080", "https://evil.example", http.StatusForbidden},
		{"rebound name", "POST", "/api/v1/proposals/p_okaaaaaaaaaaaaaa/approve", "evil.example:8080", "http://evil.example:8080", http.StatusForbidden},
		{"rebound stream", "GET", "/api/v1/channels/general/events", "evil.example:8080", "", http.StatusForbidden},
	}
	for _, tt := range tests {
		if got := send(tt.method, tt.path, tt.host, tt.origin); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

// Event streams are capped per client and in all.
func TestEventStreamsAreCapped(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, &fakeEngine{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := 0
	for i := range sse.DefaultPerCaller + 3 {
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/api/v1/channels/c%d/events", srv.URL, i), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			open++
		} else if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("stream %d: %d", i, resp.StatusCode)
		}
	}
	if open != sse.DefaultPerCaller {
		t.Fatalf("open streams = %d, want %d", open, sse.DefaultPerCaller)
	}
}

// Channels nobody watches are dropped past the cap, and leaving a channel
// never creates one.
func TestIdleChannelsArePruned(t *testing.T) {
	t.Parallel()
	c := New(&fakeEngine{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, watched := c.subscribe("watched", 0)
	for i := range maxChannels + 100 {
		_ = c.Reply(context.Background(), bot.Thread{Channel: bot.Channel{Source: bot.SourceConsole, ID: fmt.Sprint("ch", i)}}, bot.Reply{Text: "x"})
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
	eng := &pageEngine{fakeEngine: &fakeEngine{}}
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

type pageEngine struct{ *fakeEngine }

func (p *pageEngine) Proposal(ctx context.Context, id bot.ProposalID) (bot.Proposal, error) {
	if _, err := board.ParseProposalID(string(id)); err != nil {
		return bot.Proposal{}, errMalformedReached
	}
	if id != "p_pageaaaaaaaaaaaa" {
		return bot.Proposal{}, bot.ErrNotFound
	}
	return bot.Proposal{ID: id, State: bot.ProposalPending, Version: 1, RequestedBy: "alice", ExpiresAt: time.Now().Add(time.Hour),
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
	_, srv := newServer(t, &pageEngine{fakeEngine: &fakeEngine{}})
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
	_, srv := newServer(t, &fakeEngine{})
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
