package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bobnet/bobnet/board"
)

// Request returns where a request stands. ErrNotFound when unknown.
func (e *Engine) Request(ctx context.Context, id board.RequestID) (board.RequestStatus, error) {
	rec, err := e.deps.Requests.Request(ctx, id)
	if err != nil {
		return board.RequestStatus{}, err
	}
	return rec.Status, nil
}

// Proposal returns a proposal from Redis, or its history from Postgres
// once Redis has let it go. ErrNotFound when neither knows it.
func (e *Engine) Proposal(ctx context.Context, id board.ProposalID) (board.Proposal, error) {
	p, err := e.deps.Proposals.Proposal(ctx, id)
	if err == nil {
		p = e.committed(ctx, p)
		if p.State == board.ProposalPending && !e.deps.Now().Before(p.ExpiresAt) {
			p.State = board.ProposalExpired
		}
		return e.withApprovals(ctx, p), nil
	}
	if !errors.Is(err, ErrNotFound) {
		return board.Proposal{}, err
	}
	return e.proposalFromHistory(ctx, id)
}

// committed lays what Postgres committed over a proposal Redis still has
// as pending while a decision holds it: an approval answers its caller
// before Redis has its decision (recordApprovalInRedis), and a read in between
// must already see the approval. Postgres failing leaves the Redis view.
func (e *Engine) committed(ctx context.Context, p board.Proposal) board.Proposal {
	if !p.Deciding {
		return p
	}
	rec, err := e.deps.History.Proposal(ctx, p.ID)
	if err != nil || rec.State == string(board.ProposalPending) {
		return p
	}
	p.State, p.DecidedBy, p.DecidedAt, p.BoardID = board.ProposalState(rec.State), rec.DecidedBy, rec.DecidedAt, rec.BoardID
	if rec.BoardID != "" {
		p.BoardURL = board.BoardURL(e.cfg.PublicURL, rec.BoardID)
	}
	p.Deciding = false
	return p
}

// proposalFromHistory rebuilds a proposal from its Postgres record. A
// record still "pending" whose Redis copy is gone has expired: Redis losing
// a proposal never leaves it approvable.
func (e *Engine) proposalFromHistory(ctx context.Context, id board.ProposalID) (board.Proposal, error) {
	rec, err := e.deps.History.Proposal(ctx, id)
	if errors.Is(err, board.ErrNotFound) {
		return board.Proposal{}, fmt.Errorf("proposal %s: %w", id, ErrNoProposal)
	}
	if err != nil {
		return board.Proposal{}, unavailable("read proposal", err)
	}
	p := board.Proposal{
		ID: id, Version: rec.Version, Supersedes: rec.Supersedes, RequestedBy: rec.RequestedBy,
		State: board.ProposalState(rec.State), CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt, DecidedBy: rec.DecidedBy,
		DecidedAt: rec.DecidedAt, BoardID: rec.BoardID,
	}
	if ch, cid, ok := strings.Cut(rec.Channel, ":"); ok {
		p.Thread.Channel = board.Channel{Source: board.Source(ch), ID: cid}
	}
	_ = json.Unmarshal(rec.Plan, &p.Plan)
	if len(rec.Policy) > 0 && json.Unmarshal(rec.Policy, &p.Quorum) == nil {
		p = e.withApprovals(ctx, p)
	}
	if p.State == board.ProposalPending {
		p.State = board.ProposalExpired
	}
	if p.BoardID != "" {
		p.BoardURL = board.BoardURL(e.cfg.PublicURL, p.BoardID)
	}
	return p, nil
}

// ChannelStatus summarizes the channel's current board. ErrNotFound when
// the channel has none.
func (e *Engine) ChannelStatus(ctx context.Context, ch board.Channel) (board.Status, error) {
	b, err := e.deps.Boards.ChannelBoard(ctx, ch.Key())
	if errors.Is(err, board.ErrNotFound) {
		return board.Status{}, fmt.Errorf("channel %s: %w", ch.Key(), ErrNoBoard)
	}
	if err != nil {
		return board.Status{}, unavailable("channel status", err)
	}
	return e.BoardStatus(ctx, b.ID)
}

// BoardStatus summarizes a board. ErrNotFound when there is none.
func (e *Engine) BoardStatus(ctx context.Context, id board.ID) (board.Status, error) {
	st, err := e.deps.Boards.Status(ctx, id)
	if errors.Is(err, board.ErrNotFound) {
		return board.Status{}, fmt.Errorf("board %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return board.Status{}, unavailable("board status", err)
	}
	return st, nil
}
