package board

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"regexp"
	"strings"

	"github.com/go-chi/chi/v5"
)

//go:embed board.html.tmpl
var boardPageSource string

var boardPage = template.Must(template.New("board").Funcs(template.FuncMap{
	"short": func(s string, n int) string {
		r := []rune(s)
		if len(r) <= n {
			return s
		}
		return string(r[:n-1]) + "…"
	},
}).Parse(boardPageSource))

// idPattern is what board ids look like; anything else is not looked up.
var idPattern = regexp.MustCompile(`^b_[a-z2-7]{26}$`)

// BoardURL is the link to a board's page that chat messages carry.
func BoardURL(publicURL string, id ID) string {
	return strings.TrimRight(publicURL, "/") + "/boards/" + string(id)
}

// reader is what the web handlers need from the store.
type reader interface {
	Board(ctx context.Context, id ID) (Board, []Card, error)
}

// Web serves boards to people (the page chat links to) and to programs
// (JSON). The page is public because its id is unguessable; the JSON routes
// are meant to sit behind the API token.
type Web struct {
	store  reader
	logger *slog.Logger
}

// NewWeb returns the board handlers for store.
func NewWeb(store *Store, logger *slog.Logger) *Web {
	return &Web{store: store, logger: logger}
}

// APIRoutes mounts GET /api/v1/boards/{id} and GET /api/v1/boards/{id}/status.
func (w *Web) APIRoutes(r chi.Router) {
	r.Get("/api/v1/boards/{id}", w.boardJSON)
	r.Get("/api/v1/boards/{id}/status", w.statusJSON)
}

// PageRoutes mounts GET /boards/{id}.
func (w *Web) PageRoutes(r chi.Router) {
	r.Get("/boards/{id}", w.page)
}

// answers says how a handler answers a board it cannot show.
type answers struct {
	missing     func(rw http.ResponseWriter, id string)
	unavailable func(rw http.ResponseWriter)
}

var (
	jsonAnswers = answers{
		missing: func(rw http.ResponseWriter, id string) { writeError(rw, http.StatusNotFound, "no board "+id) },
		unavailable: func(rw http.ResponseWriter) {
			writeError(rw, http.StatusServiceUnavailable, "the board store is unavailable; try again shortly")
		},
	}
	pageAnswers = answers{
		missing: func(rw http.ResponseWriter, _ string) {
			rw.Header().Set("Content-Type", "text/html; charset=utf-8")
			rw.WriteHeader(http.StatusNotFound)
			_, _ = rw.Write([]byte("<!doctype html><title>No such board</title><p>No such board. Board links are long and exact: check that the whole link was copied.</p>"))
		},
		unavailable: func(rw http.ResponseWriter) {
			http.Error(rw, "The board store is unavailable; try again shortly.", http.StatusServiceUnavailable)
		},
	}
)

// load reads the board named in the URL. When it cannot, it has already
// answered, in the handler's own form, and reports false.
func (w *Web) load(rw http.ResponseWriter, r *http.Request, ans answers) (Board, []Card, bool) {
	id := chi.URLParam(r, "id")
	if !idPattern.MatchString(id) {
		ans.missing(rw, id)
		return Board{}, nil, false
	}
	b, cards, err := w.store.Board(r.Context(), ID(id))
	if errors.Is(err, ErrNotFound) {
		ans.missing(rw, id)
		return Board{}, nil, false
	}
	if err != nil {
		w.logger.Error("read board", "board", id, "err", err)
		ans.unavailable(rw)
		return Board{}, nil, false
	}
	return b, cards, true
}

func (w *Web) boardJSON(rw http.ResponseWriter, r *http.Request) {
	b, cards, ok := w.load(rw, r, jsonAnswers)
	if !ok {
		return
	}
	writeJSON(rw, http.StatusOK, map[string]any{"board": b, "cards": cards})
}

func (w *Web) statusJSON(rw http.ResponseWriter, r *http.Request) {
	b, cards, ok := w.load(rw, r, jsonAnswers)
	if !ok {
		return
	}
	writeJSON(rw, http.StatusOK, Summarize(b, cards))
}

// column is one status column of the page.
type column struct {
	Status string
	Cards  []pageCard
}

type pageCard struct {
	Card
	Anchor    string
	DependsOn []pageRef
	Blocks    []pageRef
}

type pageRef struct {
	Anchor, Title string
}

func (w *Web) page(rw http.ResponseWriter, r *http.Request) {
	b, cards, ok := w.load(rw, r, pageAnswers)
	if !ok {
		return
	}
	titles := map[CardID]string{}
	for _, c := range cards {
		titles[c.ID] = c.Title
	}
	blocks := map[CardID][]pageRef{}
	for _, c := range cards {
		for _, d := range c.DependsOn {
			blocks[d] = append(blocks[d], pageRef{Anchor: string(c.ID), Title: c.Title})
		}
	}
	byStatus := map[string][]pageCard{}
	for _, c := range cards {
		pc := pageCard{Card: c, Anchor: string(c.ID), Blocks: blocks[c.ID]}
		for _, d := range c.DependsOn {
			pc.DependsOn = append(pc.DependsOn, pageRef{Anchor: string(d), Title: titles[d]})
		}
		byStatus[c.Status] = append(byStatus[c.Status], pc)
	}
	var cols []column
	for _, s := range Statuses {
		if len(byStatus[s]) > 0 || s == "Backlog" || s == "Ready" {
			cols = append(cols, column{Status: s, Cards: byStatus[s]})
		}
	}
	st := Summarize(b, cards)
	data := map[string]any{
		"Board":   b,
		"Columns": cols,
		"Graph":   layoutGraph(cards),
		"Status":  st,
		"Total":   len(cards),
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	// No script runs on this page, and nothing it shows may load any.
	rw.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	rw.Header().Set("X-Content-Type-Options", "nosniff")
	rw.Header().Set("Referrer-Policy", "no-referrer")
	if err := boardPage.Execute(rw, data); err != nil {
		w.logger.Error("render board page", "board", b.ID, "err", err)
	}
}

// graph is the dependency graph drawn as inline SVG: cards in layers by
// their longest chain of dependencies, arrows from a card to what waits on
// it.
type graph struct {
	Width, Height int
	Nodes         []graphNode
	Edges         []graphEdge
}

type graphNode struct {
	X, Y   int
	Anchor string
	Title  string
	Status string
}

type graphEdge struct {
	X1, Y1, X2, Y2 int
}

const (
	nodeW, nodeH = 190, 44
	gapX, gapY   = 60, 18
	margin       = 10
)

func layoutGraph(cards []Card) graph {
	depth := map[CardID]int{}
	byID := map[CardID]Card{}
	for _, c := range cards {
		byID[c.ID] = c
	}
	var visit func(id CardID, seen map[CardID]bool) int
	visit = func(id CardID, seen map[CardID]bool) int {
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
	rows := map[int]int{}
	pos := map[CardID][2]int{}
	g := graph{}
	for _, c := range cards {
		d := visit(c.ID, map[CardID]bool{})
		x := margin + d*(nodeW+gapX)
		y := margin + rows[d]*(nodeH+gapY)
		rows[d]++
		pos[c.ID] = [2]int{x, y}
		g.Nodes = append(g.Nodes, graphNode{X: x, Y: y, Anchor: string(c.ID), Title: c.Title, Status: c.Status})
		g.Width = max(g.Width, x+nodeW+margin)
		g.Height = max(g.Height, y+nodeH+margin)
	}
	for _, c := range cards {
		to := pos[c.ID]
		for _, dep := range c.DependsOn {
			from, ok := pos[dep]
			if !ok {
				continue
			}
			g.Edges = append(g.Edges, graphEdge{X1: from[0] + nodeW, Y1: from[1] + nodeH/2, X2: to[0] - 4, Y2: to[1] + nodeH/2})
		}
	}
	return g
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
