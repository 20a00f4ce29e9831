package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
)

// decisionError answers a refused decision so the caller knows what to do
// next: a 403 names who may decide and the settings that change it, a 409
// on an approved proposal carries its board_url, and a 409 on a superseded
// one names the proposal that replaced it.
func (c *Chat) decisionError(w http.ResponseWriter, r *http.Request, id board.ProposalID, user string, err error) {
	ctx := r.Context()
	var de *bot.DecidedError
	var pe *bot.PolicyError
	switch {
	case errors.As(err, &pe):
		httpjson.Write(w, http.StatusForbidden, map[string]any{"error": fmt.Sprintf("%s may not decide proposal %s: %s", user, id, pe.Rule), "rule": pe.Rule})
	case errors.Is(err, bot.ErrNothingToWithdraw):
		httpjson.Write(w, http.StatusConflict, map[string]any{"error": err.Error()})
	case errors.Is(err, bot.ErrForbidden):
		out := map[string]any{"setting": "BOBNET_ADMINS"}
		who := "its requester"
		if p, perr := c.eng.Proposal(ctx, id); perr == nil {
			who = fmt.Sprintf("its requester (%s)", p.RequestedBy)
			out["requested_by"] = p.RequestedBy
		}
		out["error"] = fmt.Sprintf("%s is not allowed to decide proposal %s: only %s, the admins in BOBNET_ADMINS or the channel's deciders (BOBNET_HOOKS_FILE) may; BOBNET_ANY_MEMBER_DECIDES=true lets anyone decide", user, id, who)
		httpjson.Write(w, http.StatusForbidden, out)
	case errors.As(err, &de) && de.State == board.ProposalApproved:
		out := map[string]any{"error": err.Error(), "state": de.State, "board_id": de.BoardID, "decided_by": de.By}
		if p, perr := c.eng.Proposal(ctx, id); perr == nil && p.BoardURL != "" {
			out["board_url"] = p.BoardURL
			out["error"] = fmt.Sprintf("proposal %s was already approved by %s: its board is %s", id, de.By, p.BoardURL)
		}
		httpjson.Write(w, http.StatusConflict, out)
	case errors.As(err, &de) && de.State == board.ProposalSuperseded:
		out := map[string]any{"error": fmt.Sprintf("proposal %s was superseded by a revision", id), "state": de.State}
		if next, serr := c.successors.Successor(ctx, id); serr == nil && next != "" {
			out["superseded_by"] = next
			out["error"] = fmt.Sprintf("proposal %s was superseded by %s; decide that one instead", id, next)
		}
		httpjson.Write(w, http.StatusConflict, out)
	default:
		c.engineError(w, err)
	}
}

// validReason answers 400 for a cancel reason past bot.MaxCancelReason
// characters and reports false; an empty one is fine.
func validReason(w http.ResponseWriter, reason string) bool {
	if _, err := bot.CancelReason(reason); err != nil {
		httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf(`"reason" is optional and at most %d characters`, bot.MaxCancelReason))
		return false
	}
	return true
}

// ProposalView is a proposal as the API shows it.
type ProposalView struct {
	ID          board.ProposalID    `json:"id"`
	State       board.ProposalState `json:"state"`
	Version     int                 `json:"version"`
	Supersedes  board.ProposalID    `json:"supersedes,omitempty"`
	RequestedBy string              `json:"requested_by"`
	Request     string              `json:"request"`
	Plan        any                 `json:"plan"`
	Warnings    any                 `json:"warnings"`
	Changes     *board.Changes      `json:"changes,omitempty"`
	// BoardChanges are what approving would change on the current board.
	BoardChanges []board.BoardChange `json:"board_changes,omitempty"`
	ExpiresAt    time.Time           `json:"expires_at"`
	DecidedBy    string              `json:"decided_by,omitempty"`
	Reason       string              `json:"reason,omitempty"`
	BoardID      board.ID            `json:"board_id,omitempty"`
	BoardURL     string              `json:"board_url,omitempty"`
	Channel      string              `json:"channel"`
	// Quorum is the policy the proposal was made under and its approvals.
	Quorum *board.Quorum `json:"quorum,omitempty"`
}

// ViewProposal is p as the API and the console's channels show it.
func ViewProposal(p board.Proposal) ProposalView {
	return ProposalView{
		ID: p.ID, State: p.State, Version: p.Version, Supersedes: p.Supersedes, RequestedBy: p.RequestedBy, Request: p.Request,
		Plan: p.Plan, Warnings: p.Warnings, Changes: p.Changes, BoardChanges: p.BoardChanges, ExpiresAt: p.ExpiresAt, DecidedBy: p.DecidedBy, Reason: p.Reason,
		BoardID: p.BoardID, BoardURL: p.BoardURL, Channel: p.Thread.Channel.ID, Quorum: p.Quorum,
	}
}

// hiddenProposal is the error for a proposal out of the token's reach:
// the engine's for an unknown proposal, word for word.
func hiddenProposal(id board.ProposalID) error {
	return fmt.Errorf("proposal %s: %w", id, bot.ErrNoProposal)
}

func (c *Chat) getProposal(w http.ResponseWriter, r *http.Request) {
	id, err := bot.ParseProposalID(chi.URLParam(r, "id"))
	var p board.Proposal
	if err == nil {
		p, err = c.eng.Proposal(r.Context(), id)
	}
	if err == nil && !reaches(r, p.Thread.Channel.Key()) {
		err = hiddenProposal(id)
	}
	if err != nil {
		c.engineError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, ViewProposal(p))
}

type decision struct {
	User     string `json:"user"`
	Feedback string `json:"feedback,omitempty"`
	Reason   string `json:"reason,omitempty"` // cancel's, optional
}

// decision reads a decision's body and the proposal id in its URL. When
// either is wrong it has already answered and reports false; a malformed id
// is answered as an unknown proposal is. For a token limited to channels
// it reads the proposal too: one it may not reach is answered as an
// unknown one, before anything is decided.
func (c *Chat) decision(w http.ResponseWriter, r *http.Request) (board.ProposalID, decision, bool) {
	var d decision
	if !Decode(w, r, &d) || !ValidUser(w, r, d.User) {
		return "", d, false
	}
	id, err := bot.ParseProposalID(chi.URLParam(r, "id"))
	if err == nil && limited(r) {
		var p board.Proposal
		if p, err = c.eng.Proposal(r.Context(), id); err == nil && !reaches(r, p.Thread.Channel.Key()) {
			err = hiddenProposal(id)
		}
	}
	if err != nil {
		c.engineError(w, err)
		return "", d, false
	}
	return id, d, true
}

func (c *Chat) approve(w http.ResponseWriter, r *http.Request) {
	id, d, ok := c.decision(w, r)
	if !ok {
		return
	}
	a, err := c.eng.Approve(r.Context(), id, d.User)
	if err != nil {
		c.decisionError(w, r, id, d.User, err)
		return
	}
	if a.State == board.ProposalPending {
		httpjson.Write(w, http.StatusOK, map[string]any{"state": a.State, "approvals": a.Approvals, "needed": a.Needed})
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"board_id": a.BoardID, "board_url": a.BoardURL})
}

func (c *Chat) cancel(w http.ResponseWriter, r *http.Request) {
	id, d, ok := c.decision(w, r)
	if !ok {
		return
	}
	if !validReason(w, d.Reason) { // decisions.go
		return
	}
	p, err := c.eng.CancelWithReason(r.Context(), id, d.User, d.Reason)
	if err != nil {
		c.decisionError(w, r, id, d.User, err)
		return
	}
	httpjson.Write(w, http.StatusOK, ViewProposal(p))
}

func (c *Chat) revise(w http.ResponseWriter, r *http.Request) {
	id, d, ok := c.decision(w, r)
	if !ok {
		return
	}
	if strings.TrimSpace(d.Feedback) == "" || len(d.Feedback) > 8000 {
		httpjson.Error(w, http.StatusBadRequest, `"feedback" is required: say what to change (at most 8000 characters)`)
		return
	}
	if !PlainText(w, "feedback", d.Feedback) {
		return
	}
	if !c.allow(w, r) {
		return
	}
	rid, err := c.eng.Revise(r.Context(), id, d.User, d.Feedback)
	if err != nil {
		c.decisionError(w, r, id, d.User, err)
		return
	}
	// Everyone watching the channel sees what was asked, as in a chat.
	if p, err := c.eng.Proposal(r.Context(), id); err == nil && p.Thread.Channel.Source == board.SourceConsole {
		c.channels.Publish(p.Thread.Channel.ID, "message", map[string]any{"user": d.User, "text": d.Feedback, "request_id": rid, "revises": id})
	}
	httpjson.Write(w, http.StatusAccepted, map[string]any{"request_id": rid})
}

func (c *Chat) proposeAgain(w http.ResponseWriter, r *http.Request) {
	id, d, ok := c.decision(w, r)
	if !ok || !c.allow(w, r) {
		return
	}
	rid, err := c.eng.ProposeAgain(r.Context(), id, d.User)
	if err != nil {
		c.engineError(w, err)
		return
	}
	httpjson.Write(w, http.StatusAccepted, map[string]any{"request_id": rid})
}

// withdraw takes back the user's approval of a proposal that has not
// reached its quorum: 200 with the proposal and the approvals left.
func (c *Chat) withdraw(w http.ResponseWriter, r *http.Request) {
	id, d, ok := c.decision(w, r)
	if !ok {
		return
	}
	p, err := c.eng.Withdraw(r.Context(), id, d.User)
	if err != nil {
		c.decisionError(w, r, id, d.User, err)
		return
	}
	httpjson.Write(w, http.StatusOK, ViewProposal(p))
}
