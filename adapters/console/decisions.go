package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpapi"
)

// Successors finds the proposal that superseded another; *store.Store is
// one.
type Successors interface {
	Successor(ctx context.Context, id bot.ProposalID) (bot.ProposalID, error)
}

// SetSuccessors lets a 409 on a superseded proposal name its replacement.
func (c *Console) SetSuccessors(s Successors) { c.successors = s }

// decisionError answers a refused decision so the caller knows what to do
// next: a 403 names who may decide and the settings that change it, a 409
// on an approved proposal carries its board_url, and a 409 on a superseded
// one names the proposal that replaced it.
func (c *Console) decisionError(w http.ResponseWriter, r *http.Request, id bot.ProposalID, user string, err error) {
	ctx := r.Context()
	var de *bot.DecidedError
	var pe *bot.PolicyError
	switch {
	case errors.As(err, &pe):
		httpapi.WriteJSON(w, http.StatusForbidden, map[string]any{"error": fmt.Sprintf("%s may not decide proposal %s: %s", user, id, pe.Rule), "rule": pe.Rule})
	case errors.Is(err, bot.ErrNothingToWithdraw):
		httpapi.WriteJSON(w, http.StatusConflict, map[string]any{"error": err.Error()})
	case errors.Is(err, bot.ErrForbidden):
		out := map[string]any{"setting": "BOBNET_ADMINS"}
		who := "its requester"
		if p, perr := c.eng.Proposal(ctx, id); perr == nil {
			who = fmt.Sprintf("its requester (%s)", p.RequestedBy)
			out["requested_by"] = p.RequestedBy
		}
		out["error"] = fmt.Sprintf("%s is not allowed to decide proposal %s: only %s, the admins in BOBNET_ADMINS or the channel's deciders (BOBNET_HOOKS_FILE) may; BOBNET_ANY_MEMBER_DECIDES=true lets anyone decide", user, id, who)
		httpapi.WriteJSON(w, http.StatusForbidden, out)
	case errors.As(err, &de) && de.State == bot.ProposalApproved:
		out := map[string]any{"error": err.Error(), "state": de.State, "board_id": de.BoardID, "decided_by": de.By}
		if p, perr := c.eng.Proposal(ctx, id); perr == nil && p.BoardURL != "" {
			out["board_url"] = p.BoardURL
			out["error"] = fmt.Sprintf("proposal %s was already approved by %s: its board is %s", id, de.By, p.BoardURL)
		}
		httpapi.WriteJSON(w, http.StatusConflict, out)
	case errors.As(err, &de) && de.State == bot.ProposalSuperseded:
		out := map[string]any{"error": fmt.Sprintf("proposal %s was superseded by a revision", id), "state": de.State}
		if c.successors != nil {
			if next, serr := c.successors.Successor(ctx, id); serr == nil && next != "" {
				out["superseded_by"] = next
				out["error"] = fmt.Sprintf("proposal %s was superseded by %s; decide that one instead", id, next)
			}
		}
		httpapi.WriteJSON(w, http.StatusConflict, out)
	default:
		c.engineError(w, err)
	}
}

// validReason answers 400 for a cancel reason past bot.MaxCancelReason
// characters and reports false; an empty one is fine.
func validReason(w http.ResponseWriter, reason string) bool {
	if _, err := bot.CancelReason(reason); err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Sprintf(`"reason" is optional and at most %d characters`, bot.MaxCancelReason))
		return false
	}
	return true
}
