package console

import (
	"context"
	"net/http"

	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpapi"
)

// withdrawer is what an engine that keeps approval policies also offers;
// *bot.Engine is one.
type withdrawer interface {
	Withdraw(ctx context.Context, id bot.ProposalID, user string) (bot.Proposal, error)
}

// withdraw takes back the user's approval of a proposal that has not
// reached its quorum: 200 with the proposal and the approvals left.
func (c *Console) withdraw(w http.ResponseWriter, r *http.Request) {
	id, d, ok := c.decision(w, r)
	if !ok {
		return
	}
	eng, ok := c.eng.(withdrawer)
	if !ok {
		httpapi.WriteError(w, http.StatusNotImplemented, "this server keeps no approval policies, so there is nothing to withdraw")
		return
	}
	p, err := eng.Withdraw(r.Context(), id, d.User)
	if err != nil {
		c.decisionError(w, r, id, d.User, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, proposalJSON(p))
}
