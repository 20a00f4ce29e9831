package web

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bobnet/bobnet/board"
)

// boardPolicy lets the page run its one script, served from this server,
// and talk only to this server; nothing a card says can load or run
// anything.
var boardPolicy = policy{
	CSP:      "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	Referrer: "no-referrer",
	Cache:    "no-store",
}

// column is one status column of the page.
type column struct {
	Status string
	Class  string
	Cards  []pageCard
	Empty  bool
}

type pageCard struct {
	board.Card
	Anchor    string
	DependsOn []pageRef
	Blocks    []pageRef
	// Waiting are the dependencies not Done yet; ReadyToStart is true for
	// a card not started whose dependencies are all Done.
	Waiting      []pageRef
	ReadyToStart bool
	Criteria     []pageCriterion
	Moves        []pageMove
}

type pageRef struct {
	Anchor, Handle, Title string
}

type pageCriterion struct {
	Text string
	Done bool
}

// pageMove is one "move to" button of a card.
type pageMove struct {
	Status string
	// Refused says why the move would be refused (a started status while
	// dependencies are unfinished); the button is disabled with this
	// reason beside it.
	Refused string
}

// statusClass is a status as a CSS class: "In Progress" -> "s-in-progress".
func statusClass(status string) string {
	return "s-" + strings.ReplaceAll(strings.ToLower(status), " ", "-")
}

// joinHandles lists cards by handle: "NEWS-1, NEWS-2".
func joinHandles(refs []pageRef) string {
	hs := make([]string, len(refs))
	for i, r := range refs {
		hs[i] = r.Handle
	}
	return strings.Join(hs, ", ")
}

// consoleLink is where the page's "back to the console" link goes: the
// console channel the board was made in, or the console's start.
func consoleLink(channel string) string {
	if name, ok := strings.CutPrefix(channel, "console:"); ok && name != "" {
		return "/c/" + name
	}
	return "/"
}

func (w *Pages) script(rw http.ResponseWriter, _ *http.Request) {
	rw.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	rw.Header().Set("X-Content-Type-Options", "nosniff")
	rw.Header().Set("Cache-Control", "no-cache")
	_, _ = rw.Write(boardScript)
}

func (w *Pages) page(rw http.ResponseWriter, r *http.Request) {
	b, cards, ok := w.load(rw, r, pageAnswers)
	if !ok {
		return
	}
	byID := map[board.CardID]board.Card{}
	for _, c := range cards {
		byID[c.ID] = c
	}
	ref := func(c board.Card) pageRef { return pageRef{Anchor: string(c.ID), Handle: c.Handle, Title: c.Title} }
	blocks := map[board.CardID][]pageRef{}
	for _, c := range cards {
		for _, d := range c.DependsOn {
			blocks[d] = append(blocks[d], ref(c))
		}
	}
	st := board.Summarize(b, cards)
	ready := map[board.CardID]bool{}
	for _, c := range st.Ready {
		ready[c.ID] = true
	}
	byStatus := map[string][]pageCard{}
	for _, c := range cards {
		pc := pageCard{Card: c, Anchor: string(c.ID), Blocks: blocks[c.ID], ReadyToStart: ready[c.ID]}
		deps := slices.Clone(c.DependsOn)
		slices.SortFunc(deps, func(a, b board.CardID) int { return byID[a].Number - byID[b].Number })
		for _, d := range deps {
			pc.DependsOn = append(pc.DependsOn, ref(byID[d]))
			if byID[d].Status != "Done" {
				pc.Waiting = append(pc.Waiting, ref(byID[d]))
			}
		}
		for i, text := range c.AcceptanceCriteria {
			pc.Criteria = append(pc.Criteria, pageCriterion{Text: text, Done: slices.Contains(c.CriteriaDone, i)})
		}
		for _, s := range board.Statuses {
			if s == c.Status {
				continue
			}
			m := pageMove{Status: s}
			if len(pc.Waiting) > 0 && slices.Contains(board.Started, s) {
				m.Refused = "waits on " + joinHandles(pc.Waiting)
			}
			pc.Moves = append(pc.Moves, m)
		}
		byStatus[c.Status] = append(byStatus[c.Status], pc)
	}
	var cols []column
	for _, s := range board.Statuses {
		cols = append(cols, column{Status: s, Class: statusClass(s), Cards: byStatus[s], Empty: len(byStatus[s]) == 0})
	}
	data := map[string]any{
		"Runs":     w.runsLine(r.Context(), b.ID),
		"Board":    b,
		"Columns":  cols,
		"Graph":    layoutGraph(cards, ready),
		"Status":   st,
		"Statuses": board.Statuses,
		"Total":    len(cards),
		"Console":  consoleLink(b.Channel),
	}
	page, err := draw(boardPage(), data)
	if err != nil {
		w.logger.Error("render board page", "board", b.ID, "err", err)
		http.Error(rw, "could not render the board", http.StatusInternalServerError)
		return
	}
	if err := writePage(rw, http.StatusOK, boardPolicy, page); err != nil {
		w.logger.Debug("board page not delivered", "board", b.ID, "err", err)
	}
}

// runsLine is what the page says of a board's runs: the latest, with its
// page, and the schedule with its next slot. Runs are news on the board,
// not its substance: when they cannot be read the page shows without them.
type runsLine struct {
	Latest   *board.Run
	Schedule *board.Schedule
	Next     time.Time
}

func (w *Pages) runsLine(ctx context.Context, id board.ID) runsLine {
	var l runsLine
	if runs, err := w.store.Runs(ctx, id, 1); err == nil && len(runs) > 0 {
		l.Latest = &runs[0]
	} else if err != nil {
		w.logger.Warn("board page: runs", "board", id, "err", err)
	}
	if sc, err := w.store.ScheduleOf(ctx, id); err == nil {
		l.Schedule = &sc
		l.Next, _ = sc.Next(time.Now())
	} else if !errors.Is(err, board.ErrNotFound) {
		w.logger.Warn("board page: schedule", "board", id, "err", err)
	}
	return l
}

// graph is the dependency graph drawn as inline SVG: cards in layers by
// their longest chain of dependencies, arrows from a card to what waits on
// it, full titles wrapped onto as many lines as they need.
type graph struct {
	Width, Height int
	Nodes         []graphNode
	Edges         []graphEdge
}

type graphNode struct {
	X, Y, W, H   int
	Anchor       string
	Handle       string
	Title        string
	Lines        []graphLine
	Status       string
	Class        string
	ReadyToStart bool
	StatusX      int
	StatusY      int
}

type graphLine struct {
	X, Y int
	Text string
}

type graphEdge struct {
	X1, Y1, X2, Y2, C1, C2 int
}

const (
	graphAvail     = 1290 // content width of the graph box at a 1400 px window
	minNodeW       = 150
	maxNodeW       = 230
	graphGapX      = 34
	graphGapY      = 14
	graphMargin    = 8
	lineHeight     = 15
	charWidthTenth = 66 // average width of a 12 px character, in tenths of a pixel
)

func layoutGraph(cards []board.Card, ready map[board.CardID]bool) graph {
	depth := map[board.CardID]int{}
	byID := map[board.CardID]board.Card{}
	for _, c := range cards {
		byID[c.ID] = c
	}
	var visit func(id board.CardID, seen map[board.CardID]bool) int
	visit = func(id board.CardID, seen map[board.CardID]bool) int {
		if d, ok := depth[id]; ok {
			return d
		}
		if seen[id] { // a cycle cannot be stored, but do not loop if one were
			return 0
		}
		seen[id] = true
		d := 0
		for _, dep := range byID[id].DependsOn {
			if _, ok := byID[dep]; ok {
				d = max(d, visit(dep, seen)+1)
			}
		}
		depth[id] = d
		return d
	}
	layers := 0
	for _, c := range cards {
		layers = max(layers, visit(c.ID, map[board.CardID]bool{})+1)
	}
	g := graph{}
	if layers == 0 {
		return g
	}
	nodeW := (graphAvail - 2*graphMargin - (layers-1)*graphGapX) / layers
	nodeW = min(max(nodeW, minNodeW), maxNodeW)
	perLine := (nodeW - 16) * 10 / charWidthTenth
	colY := map[int]int{}
	pos := map[board.CardID]graphNode{}
	for _, c := range cards {
		d := depth[c.ID]
		lines := wrap(c.Handle+" · "+c.Title, perLine)
		h := 10 + len(lines)*lineHeight + 20
		y, ok := colY[d]
		if !ok {
			y = graphMargin
		}
		n := graphNode{
			X: graphMargin + d*(nodeW+graphGapX), Y: y, W: nodeW, H: h,
			Anchor: string(c.ID), Handle: c.Handle, Title: c.Title, Status: c.Status, Class: statusClass(c.Status),
			ReadyToStart: ready[c.ID], StatusX: graphMargin + d*(nodeW+graphGapX) + 8, StatusY: y + 10 + len(lines)*lineHeight + 12,
		}
		for i, l := range lines {
			n.Lines = append(n.Lines, graphLine{X: n.X + 8, Y: y + 8 + (i+1)*lineHeight - 3, Text: l})
		}
		colY[d] = y + h + graphGapY
		pos[c.ID] = n
		g.Nodes = append(g.Nodes, n)
		g.Width = max(g.Width, n.X+nodeW+graphMargin)
		g.Height = max(g.Height, y+h+graphMargin)
	}
	for _, c := range cards {
		to := pos[c.ID]
		for _, dep := range c.DependsOn {
			from, ok := pos[dep]
			if !ok {
				continue
			}
			x1, y1 := from.X+from.W, from.Y+from.H/2
			x2, y2 := to.X-3, to.Y+to.H/2
			g.Edges = append(g.Edges, graphEdge{X1: x1, Y1: y1, X2: x2, Y2: y2, C1: x1 + graphGapX/2 + 4, C2: x2 - graphGapX/2 - 4})
		}
	}
	return g
}

// wrap breaks text into lines of at most n characters at spaces, breaking
// a word only when it alone is longer than a line. Nothing is cut off.
func wrap(text string, n int) []string {
	n = max(n, 8)
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		for utf8.RuneCountInString(word) > n {
			if line != "" {
				lines = append(lines, line)
				line = ""
			}
			r := []rune(word)
			lines = append(lines, string(r[:n]))
			word = string(r[n:])
		}
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= n:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
