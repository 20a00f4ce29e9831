package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/plan"
)

// proposalPage is parsed when first drawn (lazyTemplate).
var proposalPage = lazyTemplate("proposal.html.tmpl", nil)

// proposalPolicy lets the page load the console's stylesheet and nothing
// else.
var proposalPolicy = policy{
	CSP:   "default-src 'none'; style-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'",
	Cache: "no-store",
}

// ProposalView is a proposal as its page shows it. Its owner (the
// console, which reads proposals through the engine) fills it in.
type ProposalView struct {
	ID, Name, Goal, RequestedBy, Request, Answer, DecidedBy, BoardURL, ExpiresAt string
	Quorum                                                                       string // approvals so far and the policy
	State                                                                        string // "pending", "approved", …
	Version                                                                      int
	Warnings                                                                     []plan.Issue
	Cards                                                                        []ProposalCard
}

// ProposalCard is one card as the proposal page shows it.
type ProposalCard struct {
	Title, Body, Assignee, Status, WorkspaceMode string
	AcceptanceCriteria                           []string
	DependsOn                                    []string // titles
}

// ErrNoProposal is what a ProposalViews reports for an id it has no
// proposal for, malformed ids included: the page answers 404.
var ErrNoProposal = errors.New("no such proposal")

// ProposalViews finds the proposal a page link names, by the id as it
// appears in the link (not yet checked).
type ProposalViews interface {
	ProposalView(ctx context.Context, id string) (ProposalView, error)
}

// ProposalPage serves /proposals/{id}: a read-only page of a proposal,
// for the "read the whole proposal" link in chat. Like a board page it
// needs no token: the id is unguessable, and the page decides nothing.
func ProposalPage(views ProposalViews, logger *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		v, err := views.ProposalView(r.Context(), id)
		if errors.Is(err, ErrNoProposal) {
			http.Error(w, "no such proposal", http.StatusNotFound)
			return
		}
		if err != nil {
			logger.Warn("proposal page", "proposal", id, "err", err)
			http.Error(w, "BobNet's database is unavailable right now; try again shortly", http.StatusServiceUnavailable)
			return
		}
		page, err := draw(proposalPage(), v)
		if err != nil {
			logger.Error("render proposal page", "proposal", id, "err", err)
			http.Error(w, "could not render the proposal", http.StatusInternalServerError)
			return
		}
		_ = writePage(w, http.StatusOK, proposalPolicy, page)
	}
}
