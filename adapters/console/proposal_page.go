package console

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/web"
)

// proposalViews gives web's proposal page the proposals the engine holds.
type proposalViews struct{ eng Engine }

// ProposalView reads the proposal id names; a malformed id or one the
// engine does not know is web.ErrNoProposal.
func (v proposalViews) ProposalView(ctx context.Context, text string) (web.ProposalView, error) {
	id, err := bot.ParseProposalID(text)
	var p board.Proposal
	if err == nil {
		p, err = v.eng.Proposal(ctx, id)
	}
	if errors.Is(err, bot.ErrNotFound) {
		return web.ProposalView{}, fmt.Errorf("proposal %q: %w: %w", text, err, web.ErrNoProposal)
	}
	if err != nil {
		return web.ProposalView{}, fmt.Errorf("read proposal %s: %w", id, err)
	}
	return pageData(p), nil
}

func pageData(p board.Proposal) web.ProposalView {
	d := web.ProposalView{
		ID: string(p.ID), Name: "Proposed plan", RequestedBy: p.RequestedBy, Request: p.Request, Answer: p.Plan.Answer,
		DecidedBy: p.DecidedBy, BoardURL: p.BoardURL, State: string(p.State), Version: p.Version, Warnings: p.Warnings,
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
			d.Cards = append(d.Cards, web.ProposalCard{Title: c.Title, Body: c.Body, Assignee: c.Assignee, Status: c.Status,
				WorkspaceMode: mode, AcceptanceCriteria: c.AcceptanceCriteria, DependsOn: deps[c.TempID]})
		}
	}
	return d
}
