package web_test

import (
	"bytes"
	"context"
	"image/png"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
	"github.com/bobnet/bobnet/web"
	"github.com/bobnet/bobnet/web/webtest"
)

func newWebServer(t *testing.T, s *store.Store) *httptest.Server {
	t.Helper()
	r := chi.NewRouter()
	w := web.New(s, nil, nil, storetest.Logger(t))
	w.PageRoutes(r)
	httpapi.NewBoards(s, w.Events, storetest.Logger(t)).Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

// hostilePlan is the newspaper plan with script and link injection in
// every text field a model controls.
func hostilePlan(t *testing.T) plan.Envelope {
	t.Helper()
	res := planner.Check([]byte(plannertest.Testdata(t, "plans/valid-hostile-text.json")), plan.Options{Profiles: profiles})
	if !res.Valid {
		t.Fatal(res.Errors)
	}
	p := *res.Plan
	a := &p.Actions[0]
	a.Board.Goal = `"><script>alert('goal')</script><a href="javascript:alert(5)">x</a>`
	a.Cards[2].Assignee = `<img src=x onerror=alert(6)>`
	a.Cards[3].Notes = `<iframe src="javascript:alert(7)"></iframe>`
	a.Cards[4].Title = `javascript:alert(8)`
	return p
}

func TestBoardPageEscapesModelText(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	res, err := s.Execute(context.Background(), board.Execution{ProposalID: "p_h", Channel: "c", Plan: hostilePlan(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := newWebServer(t, s)
	resp, err := http.Get(srv.URL + "/boards/" + string(res.BoardID))
	if err != nil {
		t.Fatal(err)
	}
	body := new(bytes.Buffer)
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	html := body.String()
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	// The page's own script is the one <script> allowed, by its src.
	own := `<script src="/board-static/board.js"></script>`
	if strings.Count(html, own) != 1 {
		t.Errorf("page does not load its script exactly once")
	}
	for _, bad := range []string{"<script", "<img", "<iframe", `href="javascript`} {
		if strings.Contains(strings.ToLower(strings.Replace(html, own, "", 1)), bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if !strings.Contains(html, "&lt;script&gt;alert(&#39;board&#39;)&lt;/script&gt;") {
		t.Error("board name not shown as escaped text")
	}
	for _, path := range []string{"/boards/b_aaaaaaaaaaaaaaaaaaaaaaaaaa", "/boards/1", "/boards/%3Cscript%3E"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
}

func TestBoardPageInBrowser(t *testing.T) {
	t.Parallel()
	ctx := webtest.Browser(t)
	s := storetest.NewStore(t)
	res, err := s.Execute(context.Background(), board.Execution{ProposalID: "p_b", Channel: "c", Plan: hostilePlan(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := newWebServer(t, s)

	dialogs := make(chan string, 10)
	if err := chromedp.Listen(ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs <- d.Message
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/boards/"+string(res.BoardID)), chromedp.WaitVisible(chromedp.CSS("#board-name"))); err != nil {
		t.Fatal(err)
	}
	name := run(t, ctx, chromedp.Text(chromedp.CSS("#board-name")))
	firstTitle := run(t, ctx, chromedp.Evaluate[string](`document.getElementById('`+string(res.CardIDs["topic_policy"])+`').querySelector('h4 .title').textContent`))
	scripts := run(t, ctx, chromedp.Evaluate[int](`[...document.querySelectorAll('script')].filter(s => s.getAttribute('src') !== '/board-static/board.js').length`))
	jsLinks := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[href^="javascript"], [src^="javascript"], iframe, img').length`))
	cards := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('article.card').length`))
	columns := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('section.column').length`))
	svgNodes := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg a.node rect').length`))
	shot := run(t, ctx, chromedp.FullScreenshot(80))
	select {
	case msg := <-dialogs:
		t.Fatalf("a script ran: dialog %q", msg)
	default:
	}
	if name != "<script>alert('board')</script> <!channel>" {
		t.Errorf("board name shown as %q", name)
	}
	if !strings.Contains(firstTitle, "<script>alert(1)</script>") {
		t.Errorf("first card title shown as %q", firstTitle)
	}
	if scripts != 0 || jsLinks != 0 {
		t.Errorf("scripts %d, javascript links/frames/images %d", scripts, jsLinks)
	}
	if cards != 10 || columns != 6 || svgNodes != 10 {
		t.Errorf("cards %d, columns %d, graph nodes %d", cards, columns, svgNodes)
	}
	if len(shot) == 0 {
		t.Fatal("empty screenshot")
	}
	pngShot := run(t, ctx, chromedp.CaptureScreenshot())
	if img, err := png.Decode(bytes.NewReader(pngShot)); err != nil || img.Bounds().Dx() < 800 {
		t.Fatalf("screenshot is not a page-sized PNG: %v", err)
	}
	// Saved for people to look at when BOBNET_SCREENSHOTS names a folder.
	if dir := os.Getenv("BOBNET_SCREENSHOTS"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "board-page.png"), pngShot, 0o644)
	}
}

// run runs one browser action and fails the test on error.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// brokenPipe is a reader who closed the page: every write fails.
type brokenPipe struct{ *httptest.ResponseRecorder }

func (brokenPipe) Write([]byte) (int, error) { return 0, syscall.EPIPE }

func TestBoardPageClosedByReaderIsNoError(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	res, err := s.Execute(context.Background(), board.Execution{ProposalID: "p_pipe", Channel: "c", Plan: newspaper(t)})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	r := chi.NewRouter()
	web.New(s, nil, nil, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))).PageRoutes(r)
	req := httptest.NewRequest(http.MethodGet, "/boards/"+string(res.BoardID), nil)
	r.ServeHTTP(brokenPipe{httptest.NewRecorder()}, req)
	if strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "board page not delivered") {
		t.Fatalf("a closed page should be logged at debug, not as an error:\n%s", logs.String())
	}
}
