package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/store/storetest"
	"github.com/bobnet/bobnet/web/webtest"
)

// bigPlan is a 64-card plan in eight layers of eight (each card depends on
// the one eight before it), with long titles, one of them at the 200
// character limit.
func bigPlan() plan.Envelope {
	topics := []string{"regional supply chains", "the city council budget", "school enrolment figures", "river water quality",
		"housing permits issued this quarter", "public transport ridership", "hospital waiting times", "local business openings"}
	var cards []plan.CardDraft
	var links []plan.Link
	for i := range 64 {
		title := fmt.Sprintf("Step %d of the investigation: gather, check and summarize what is known about %s for the weekly edition", i+1, topics[i%8])
		if i == 63 {
			title = strings.Repeat("A very long card title that keeps going ", 5)[:200]
		}
		cards = append(cards, plan.CardDraft{
			TempID: fmt.Sprintf("c%02d", i), Title: strings.TrimSpace(title), Body: "Do the work described in the title and write it down.",
			Assignee: profiles[i%len(profiles)], Status: "Backlog", WorkspaceMode: "Direct",
			AcceptanceCriteria: []string{"Sources linked", "Reviewed by a second person"},
		})
		if i >= 8 {
			links = append(links, plan.Link{Card: fmt.Sprintf("c%02d", i), DependsOn: fmt.Sprintf("c%02d", i-8)})
		}
	}
	return plan.Envelope{Kind: plan.KindProposeActions, Actions: []plan.Action{{
		Type: plan.ActionCreateBoardWithCards, Board: &plan.BoardDraft{Name: "Weekly Investigations Desk", Goal: "Sixty-four steps of research for the weekly edition."},
		Cards: cards, Links: links,
	}}}
}

// pageReport is what the browser measures on a board page.
type pageReport struct {
	InnerWidth   int      `json:"innerWidth"`
	PageWidth    int      `json:"pageWidth"`
	Cards        int      `json:"cards"`
	Titles       []string `json:"titles"`
	Problems     []string `json:"problems"`
	GraphNodes   int      `json:"graphNodes"`
	GraphTitles  []string `json:"graphTitles"`
	GraphFits    bool     `json:"graphFits"`
	GraphScrolls bool     `json:"graphScrolls"`
	HintShown    bool     `json:"hintShown"`
	ColumnColors []string `json:"columnColors"`
	NodeColors   map[string]string
	Columns      []string `json:"columns"`
	ColumnWidths []int    `json:"columnWidths"`
}

const measure = `(() => {
  const out = {innerWidth: window.innerWidth, pageWidth: document.documentElement.scrollWidth, problems: [], titles: [], graphTitles: [], columnColors: [], NodeColors: {}, columns: [], columnWidths: []};
  const cards = [...document.querySelectorAll('article.card')];
  out.cards = cards.length;
  for (const c of cards) {
    const r = c.getBoundingClientRect();
    const h = c.querySelector('h4');
    const t = h.querySelector('.title');
    out.titles.push(t.textContent);
    const hr = h.getBoundingClientRect();
    if (r.width < 150 || r.height < 40) out.problems.push(c.dataset.handle + ': card is ' + r.width + 'x' + r.height);
    const col = c.closest('section.column').getBoundingClientRect();
    if (r.left < col.left - 1 || r.right > col.right + 1) out.problems.push(c.dataset.handle + ': card outside its column');
    if (h.scrollWidth > h.clientWidth + 1 || h.scrollHeight > h.clientHeight + 1) out.problems.push(c.dataset.handle + ': title clipped');
    if (hr.right > r.right + 1 || hr.left < r.left - 1) out.problems.push(c.dataset.handle + ': title outside its card');
    const cs = getComputedStyle(h);
    if (cs.textOverflow === 'ellipsis' || cs.whiteSpace === 'nowrap' || cs.visibility !== 'visible') out.problems.push(c.dataset.handle + ': title not shown whole');
  }
  const box = document.getElementById('graph-scroll');
  const svg = box.querySelector('svg');
  const br = box.getBoundingClientRect();
  const sr = svg.getBoundingClientRect();
  out.graphFits = sr.width <= box.clientWidth + 1 && sr.left >= br.left - 1 && br.right <= window.innerWidth;
  out.graphScrolls = br.right <= window.innerWidth && ['auto', 'scroll'].includes(getComputedStyle(box).overflowX) && box.scrollWidth > box.clientWidth;
  const hint = document.getElementById('scroll-hint');
  out.hintShown = !!hint && hint.getBoundingClientRect().width > 0;
  const nodes = [...svg.querySelectorAll('a.node')];
  out.graphNodes = nodes.length;
  for (const n of nodes) {
    out.graphTitles.push([...n.querySelectorAll('text.title tspan')].map(s => s.textContent).join(' '));
    out.NodeColors[n.dataset.status] = getComputedStyle(n.querySelector('rect')).fill;
  }
  for (const col of document.querySelectorAll('section.column')) {
    out.columns.push(col.dataset.status);
    out.columnColors.push(getComputedStyle(col).borderTopColor);
    out.columnWidths.push(Math.round(col.getBoundingClientRect().width));
  }
  return JSON.stringify(out);
})()`

// measurePage measures the page as it is now laid out.
func measurePage(t *testing.T, ctx context.Context) pageReport {
	t.Helper()
	raw := run(t, ctx, chromedp.Evaluate[string](measure))
	var rep pageReport
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// screenshot takes the whole page as a PNG, checks it is as wide as the
// window (nothing sticks out sideways) and saves it when BOBNET_SCREENSHOTS
// names a folder.
func screenshot(t *testing.T, ctx context.Context, name string, width int) {
	t.Helper()
	shot := run(t, ctx, chromedp.FullScreenshot(100))
	img, _, err := image.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if w := img.Bounds().Dx(); w != width {
		t.Errorf("%s is %d px wide, want %d", name, w, width)
	}
	if dir := os.Getenv("BOBNET_SCREENSHOTS"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, name), shot, 0o644)
	}
}

func squash(s string) string { return strings.Join(strings.Fields(s), "") }

// checkPage checks what a board page a team lead would share must do at
// any width: no sideways scroll of the page, every card inside its column
// with its full title, six status columns of one width, the graph inside
// its box, colours by status.
func checkPage(t *testing.T, rep pageReport, cards []board.Card, width int) {
	t.Helper()
	if rep.InnerWidth != width || rep.PageWidth > rep.InnerWidth {
		t.Errorf("window %d px, page %d px wide: the page must not scroll sideways", rep.InnerWidth, rep.PageWidth)
	}
	for _, w := range rep.ColumnWidths {
		if w != rep.ColumnWidths[0] {
			t.Errorf("columns of different widths: %v", rep.ColumnWidths)
			break
		}
	}
	for _, p := range rep.Problems {
		t.Error(p)
	}
	if rep.Cards != len(cards) || rep.GraphNodes != len(cards) {
		t.Fatalf("%d cards and %d graph nodes shown, want %d", rep.Cards, rep.GraphNodes, len(cards))
	}
	want := map[string]bool{}
	wantGraph := map[string]bool{}
	for _, c := range cards {
		want[c.Title] = true
		wantGraph[squash(c.Handle+" · "+c.Title)] = true
	}
	for _, title := range rep.Titles {
		if !want[title] {
			t.Errorf("card title %q is not a full title", title)
		}
	}
	for _, title := range rep.GraphTitles {
		if !wantGraph[squash(title)] {
			t.Errorf("graph node says %q, not a full title", title)
		}
	}
	if strings.Join(rep.Columns, ",") != strings.Join(board.Statuses, ",") {
		t.Errorf("columns = %v", rep.Columns)
	}
	if !rep.GraphFits {
		t.Errorf("the graph does not fit its box")
	}
	colors := map[string]bool{}
	for _, c := range rep.ColumnColors {
		colors[c] = true
	}
	if len(colors) != 6 {
		t.Errorf("status columns have %d colours, want 6: %v", len(colors), rep.ColumnColors)
	}
	nodeColors := map[string]bool{}
	for _, c := range rep.NodeColors {
		nodeColors[c] = true
	}
	if len(nodeColors) != len(rep.NodeColors) {
		t.Errorf("graph nodes of different statuses share a colour: %v", rep.NodeColors)
	}
}

func TestBoardPageScreenshots(t *testing.T) {
	t.Parallel()
	ctx := webtest.Browser(t)
	s := storetest.NewStore(t)
	srv := newWebServer(t, s)
	bg := context.Background()

	// The newspaper board, a few cards along.
	id, cards := newspaperBoard(t, s, "console:shots")
	// In this order: the research cards may start once the topic is Done.
	for _, m := range [][2]string{{"topic_policy", "Done"}, {"research_a", "In Progress"}, {"research_b", "Review"}, {"research_c", "Blocked"}} {
		if _, err := s.ChangeCard(bg, board.CardChange{Card: cards[m[0]].ID, Actor: "test", Status: ptr(m[1])}); err != nil {
			t.Fatal(err)
		}
	}
	_, all, _ := s.Board(bg, id)
	for _, width := range []int{1280, 390} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(srv.URL+"/boards/"+string(id)), chromedp.WaitVisible(chromedp.CSS("#board-name"))); err != nil {
			t.Fatal(err)
		}
		rep := measurePage(t, ctx)
		checkPage(t, rep, all, width)
		if len(rep.NodeColors) != 5 {
			t.Errorf("graph colours = %v, want one for each of the 5 statuses in use", rep.NodeColors)
		}
		screenshot(t, ctx, fmt.Sprintf("board-newspaper-%d.png", width), width)
	}

	// 64 cards in eight layers: drawn to fit the box, and at actual size
	// (one click) wider than it, scrolling in the box and saying so.
	res, err := s.Execute(bg, board.Execution{ProposalID: "p_big", Channel: "console:big", Plan: bigPlan()})
	if err != nil {
		t.Fatal(err)
	}
	_, big, _ := s.Board(bg, res.BoardID)
	for i, st := range []string{"Done", "Done", "Done", "Blocked", "Review"} {
		if _, err := s.ChangeCard(bg, board.CardChange{Card: big[i].ID, Actor: "test", Status: ptr(st)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ChangeCard(bg, board.CardChange{Card: big[8].ID, Actor: "test", Status: ptr("In Progress")}); err != nil {
		t.Fatal(err)
	}
	_, big, _ = s.Board(bg, res.BoardID)
	for _, width := range []int{1280, 390} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(srv.URL+"/boards/"+string(res.BoardID)), chromedp.WaitVisible(chromedp.CSS("#board-name"))); err != nil {
			t.Fatal(err)
		}
		checkPage(t, measurePage(t, ctx), big, width)
		screenshot(t, ctx, fmt.Sprintf("board-64-cards-%d.png", width), width)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button[data-zoom="actual"]`))); err != nil {
		t.Fatal(err)
	}
	rep := measurePage(t, ctx)
	if rep.GraphFits || !rep.GraphScrolls || !rep.HintShown {
		t.Errorf("at actual size the 64-card graph should be wider than its box, scroll in it and say so: fits %v, scrolls %v, hint %v", rep.GraphFits, rep.GraphScrolls, rep.HintShown)
	}
	if rep.PageWidth > rep.InnerWidth {
		t.Errorf("at actual size the graph widened the page to %d px", rep.PageWidth)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button[data-zoom="fit"]`))); err != nil {
		t.Fatal(err)
	}
	if !measurePage(t, ctx).GraphFits {
		t.Error("back to fit, the graph does not fit its box")
	}
}
