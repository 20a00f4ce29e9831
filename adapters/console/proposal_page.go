package console

import (
	"bytes"
	_ "embed"
	"errors"
	"html/template"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
)

//go:embed proposal.html.tmpl
var proposalPageSource string

// proposalPage is parsed when first drawn, as web's board page is.
var proposalPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("proposal").Parse(proposalPageSource))
})

// pageCard is one card as the proposal page shows it.
type pageCard struct {
	Title, Body, Assignee, Status, WorkspaceMode string
	AcceptanceCriteria                           []string
	DependsOn                                    []string // titles
}

// proposalPageData is what the proposal page shows.
type proposalPageData struct {
	ID, Name, Goal, RequestedBy, Request, Answer, DecidedBy, BoardURL, ExpiresAt string
	Quorum                                                                       string // approvals so far and the policy
	State                                                                        bot.ProposalState
	Version                                                                      int
	Warnings                                                                     []plan.Issue
	Cards                                                                        []pageCard
}

func pageData(p bot.Proposal) proposalPageData {
	d := proposalPageData{
		ID: string(p.ID), Name: "Proposed plan", RequestedBy: p.RequestedBy, Request: p.Request, Answer: p.Plan.Answer,
		DecidedBy: p.DecidedBy, BoardURL: p.BoardURL, State: p.State, Version: p.Version, Warnings: p.Warnings,
		ExpiresAt: p.ExpiresAt.UTC().Format(time.RFC1123), Quorum: bot.QuorumText(p, nil),
	}
	for _, a := range p.Plan.Actions {
		if a.Board != nil {
			d.Name, d.Goal = a.Board.Name, a.Board.Goal
		}
		deps := a.DependsOnTitles()
		for _, c := range a.Cards {
			mode := c.WorkspaceMode
			if mode == "" {
				mode = plan.WorkspaceDirect
			}
			d.Cards = append(d.Cards, pageCard{Title: c.Title, Body: c.Body, Assignee: c.Assignee, Status: c.Status,
				WorkspaceMode: mode, AcceptanceCriteria: c.AcceptanceCriteria, DependsOn: deps[c.TempID]})
		}
	}
	return d
}

// proposalHTML serves /proposals/{id}: a read-only page of a proposal, for
// the "read the whole proposal" link in chat. Like a board page it needs
// no token: the id is unguessable, and the page decides nothing.
func (c *Console) proposalHTML(w http.ResponseWriter, r *http.Request) {
	id, err := bot.ParseProposalID(chi.URLParam(r, "id"))
	var p bot.Proposal
	if err == nil {
		p, err = c.eng.Proposal(r.Context(), id)
	}
	if errors.Is(err, bot.ErrNotFound) {
		http.Error(w, "no such proposal", http.StatusNotFound)
		return
	}
	if err != nil {
		c.logger.Warn("proposal page", "proposal", id, "err", err)
		http.Error(w, "BobNet's database is unavailable right now; try again shortly", http.StatusServiceUnavailable)
		return
	}
	var buf bytes.Buffer
	if err := proposalPage().Execute(&buf, pageData(p)); err != nil {
		c.logger.Error("render proposal page", "proposal", id, "err", err)
		http.Error(w, "could not render the proposal", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}
