package run

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
)

// PageStore is what the run page reads; *store.Store is one.
type PageStore interface {
	Board(ctx context.Context, id board.ID) (board.Board, []board.Card, error)
	RunByNumber(ctx context.Context, id board.ID, n int) (board.Run, error)
}

// Pages serves a run's page, the morning edition: every card's output in
// dependency order, rendered from Markdown and sanitized.
type Pages struct {
	store  PageStore
	md     outputs
	logger *slog.Logger
}

//go:embed edition.html.tmpl
var editionSource string

// editionPage is parsed when first drawn, as web's board page is.
var editionPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("edition").Funcs(template.FuncMap{
		"when": func(t time.Time) string { return t.UTC().Format("Mon 2 Jan 2006, 15:04 UTC") },
		// A person is shown by a readable label (@U123, @alice:server).
		"assignee": board.AssigneeLabel,
	}).Parse(editionSource))
})

// editionCSP allows the page's own style and nothing else to run or load
// but images over https.
const editionCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// NewPages makes the run pages. Outputs are Markdown from models and
// other tools, rendered safe (see outputs): links kept, marked nofollow
// and opened in a new tab.
func NewPages(store PageStore, logger *slog.Logger) *Pages {
	return &Pages{store: store, md: newOutputs(), logger: logger}
}

// Routes mounts GET /boards/{id}/runs/{n}, as public as the board page:
// whoever has the board's unguessable link may read its editions.
func (p *Pages) Routes(r chi.Router) {
	r.Get("/boards/{id}/runs/{n}", p.edition)
}

// story is one card in the edition.
type story struct {
	board.RunCard
	HTML template.HTML
}

func (p *Pages) edition(w http.ResponseWriter, r *http.Request) {
	id, err := board.ParseID(chi.URLParam(r, "id"))
	n, nerr := strconv.Atoi(chi.URLParam(r, "n"))
	if err != nil || nerr != nil || n < 1 {
		http.Error(w, "No such run. Run links are exact: check that the whole link was copied.", http.StatusNotFound)
		return
	}
	b, _, err := p.store.Board(r.Context(), id)
	var run board.Run
	if err == nil {
		run, err = p.store.RunByNumber(r.Context(), id, n)
	}
	if errors.Is(err, board.ErrNotFound) {
		http.Error(w, "No such run. Run links are exact: check that the whole link was copied.", http.StatusNotFound)
		return
	}
	if err != nil {
		p.logger.Warn("run page", "board", id, "run", n, "err", err)
		http.Error(w, "The board store is unavailable; try again shortly.", http.StatusServiceUnavailable)
		return
	}
	stories := make([]story, 0, len(run.Cards))
	for _, c := range InDependencyOrder(run.Cards) {
		s := story{RunCard: c}
		if c.Output != "" {
			s.HTML = p.md.HTML(c.Output)
		}
		stories = append(stories, s)
	}
	var page bytes.Buffer
	if err := editionPage().Execute(&page, map[string]any{"Board": b, "Run": run, "Stories": stories}); err != nil {
		p.logger.Error("run page", "err", err)
		http.Error(w, "The page could not be drawn.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", editionCSP)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(page.Bytes())
}

// InDependencyOrder orders a run's cards so that each comes after every
// card it depends on, keeping the board's order otherwise (Kahn's
// algorithm, always taking the earliest ready card).
func InDependencyOrder(cards []board.RunCard) []board.RunCard {
	index := map[board.CardID]int{}
	for i, c := range cards {
		index[c.Card] = i
	}
	waits := make([]int, len(cards))
	next := make([][]int, len(cards))
	for i, c := range cards {
		for _, d := range c.DependsOn {
			if j, ok := index[d]; ok {
				waits[i]++
				next[j] = append(next[j], i)
			}
		}
	}
	out := make([]board.RunCard, 0, len(cards))
	done := make([]bool, len(cards))
	for len(out) < len(cards) {
		pick := -1
		for i := range cards {
			if !done[i] && waits[i] == 0 {
				pick = i
				break
			}
		}
		if pick < 0 {
			// A cycle cannot be stored; should one appear, keep the rest
			// in board order rather than lose cards.
			for i := range cards {
				if !done[i] {
					pick = i
					break
				}
			}
		}
		done[pick] = true
		out = append(out, cards[pick])
		for _, k := range next[pick] {
			waits[k]--
		}
	}
	return out
}
