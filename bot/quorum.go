package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bobnet/bobnet/board"
)

// ErrNothingToWithdraw means the user has no approval of the proposal to
// withdraw.
var ErrNothingToWithdraw = errors.New("no approval to withdraw")

// beingDecided reports whether err says someone else holds the proposal's
// decision right now.
func beingDecided(err error) bool {
	var de *DecidedError
	return errors.As(err, &de) && de.State == beingDecidedState
}

// approveQuorum records user's approval of a proposal that needs several.
// Short of the quorum it returns the pending Approval. The approval that
// completes it comes back with the proposal claimed (done nil), for
// Approve to execute; if another completing approver executed it
// meanwhile, done is that approval. held is the caller's claim, nil when
// it holds none (when it does, it checked user may approve).
func (e *Engine) approveQuorum(ctx context.Context, p board.Proposal, held *claim, user string) (_ board.Proposal, _ *claim, done *board.Approval, _ error) {
	if held != nil {
		// Approvals are recorded without the claim, so concurrent
		// approvers are never told "being decided".
		e.release(ctx, held)
	} else if err := e.decidable(ctx, p, user, "approve"); err != nil {
		return p, nil, nil, err
	}
	ps := e.deps.Policies
	detail, _ := json.Marshal(withVia(ctx, map[string]any{"version": p.Version, "needed": p.Quorum.Needed, "policy": p.Quorum.Key}))
	approvers, err := ps.AddApproval(ctx, board.ApprovalChange{ProposalID: p.ID, User: user, Channel: p.Thread.Channel.Key(), Detail: detail})
	if errors.Is(err, board.ErrProposalClosed) {
		err := e.howEnded(ctx, p.ID, &done)
		return p, nil, done, err
	}
	if err != nil {
		return p, nil, nil, unavailable("record approval of "+string(p.ID), err)
	}
	q := *p.Quorum
	q.Approvals = approvers
	p.Quorum = &q
	if len(approvers) < q.Needed {
		e.queuePost(p.Thread, "update preview", func(ctx context.Context, poster Poster) error {
			return e.updatePreview(ctx, poster, p)
		}, "proposal", p.ID)
		return p, nil, &board.Approval{ProposalID: p.ID, State: board.ProposalPending, Approvals: approvers, Needed: q.Needed}, nil
	}
	return e.claimCompleted(ctx, p.ID, user)
}

// claimCompleted takes the decision of a proposal whose quorum is
// complete. Every approver who completed it gets here, possibly at once
// and on several replicas: one claims and executes, the others wait for
// its outcome (the claim frees itself within ClaimTTL) and answer with the
// same board. The claim comes back held (with done nil) to the one that
// executes.
func (e *Engine) claimCompleted(ctx context.Context, id board.ProposalID, user string) (board.Proposal, *claim, *board.Approval, error) {
	deadline := time.Now().Add(e.cfg.ClaimTTL + time.Second)
	holder := newHolder("approve", user)
	for wait := 5 * time.Millisecond; ; wait = min(wait*2, 100*time.Millisecond) {
		p, claimed, err := e.deps.Proposals.ClaimProposal(ctx, id, holder, e.cfg.ClaimTTL)
		var c *claim
		if claimed {
			c = e.keep(id, holder)
		}
		switch {
		case errors.Is(err, ErrNotFound):
			var done *board.Approval
			err := e.howEnded(ctx, id, &done)
			return board.Proposal{}, nil, done, err
		case err != nil:
			return board.Proposal{}, nil, nil, unavailable("claim proposal", err)
		case claimed && p.State == board.ProposalPending && e.deps.Now().Before(p.ExpiresAt):
			// A withdrawal holds the claim too: the approvals read now,
			// under the claim, are the ones the board is created on.
			now, err := e.deps.Policies.Approvals(ctx, id)
			if err != nil {
				e.release(ctx, c)
				return p, nil, nil, unavailable("read approvals of "+string(id), err)
			}
			if p.Quorum == nil {
				return p, c, nil, nil
			}
			q := *p.Quorum
			q.Approvals = now
			p.Quorum = &q
			if len(now) < q.Needed {
				e.release(ctx, c)
				return p, nil, &board.Approval{ProposalID: id, State: board.ProposalPending, Approvals: now, Needed: q.Needed}, nil
			}
			return p, c, nil, nil
		case claimed:
			e.release(ctx, c)
		}
		if p.State == board.ProposalApproved {
			return p, nil, &board.Approval{ProposalID: id, BoardID: p.BoardID, BoardURL: p.BoardURL}, nil
		}
		if p.State != board.ProposalPending {
			return p, nil, nil, &DecidedError{State: p.State, By: p.DecidedBy, BoardID: p.BoardID}
		}
		if !e.deps.Now().Before(p.ExpiresAt) {
			return p, nil, nil, fmt.Errorf("proposal %s: %w", id, ErrExpired)
		}
		if rec, err := e.deps.History.Proposal(ctx, id); err == nil && rec.State != string(board.ProposalPending) {
			var done *board.Approval
			err := e.howEndedFrom(rec, &done)
			return p, nil, done, err
		}
		if time.Now().After(deadline) {
			return p, nil, nil, &DecidedError{State: beingDecidedState}
		}
		select {
		case <-ctx.Done():
			return p, nil, nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// howEnded reads how a proposal that is no longer pending ended: an
// approval sets *done (every approver of a completed quorum gets the
// board), anything else is the error to return.
func (e *Engine) howEnded(ctx context.Context, id board.ProposalID, done **board.Approval) error {
	rec, err := e.deps.History.Proposal(ctx, id)
	if errors.Is(err, board.ErrNotFound) {
		return fmt.Errorf("proposal %s: %w", id, ErrExpired)
	}
	if err != nil {
		return unavailable("read proposal", err)
	}
	return e.howEndedFrom(rec, done)
}

func (e *Engine) howEndedFrom(rec board.ProposalRecord, done **board.Approval) error {
	switch board.ProposalState(rec.State) {
	case board.ProposalApproved:
		*done = &board.Approval{ProposalID: rec.ID, BoardID: rec.BoardID, BoardURL: board.BoardURL(e.cfg.PublicURL, rec.BoardID)}
		return nil
	case board.ProposalPending:
		return fmt.Errorf("proposal %s: %w", rec.ID, ErrExpired)
	}
	return &DecidedError{State: board.ProposalState(rec.State), By: rec.DecidedBy, BoardID: rec.BoardID}
}

// Withdraw takes back user's approval of a pending proposal that has not
// reached its quorum yet. ErrNothingToWithdraw when user has none; a
// *DecidedError "being decided" while the approval completing the quorum
// is executing.
func (e *Engine) Withdraw(ctx context.Context, id board.ProposalID, user string) (board.Proposal, error) {
	// The claim orders a withdrawal against the approval that completes
	// the quorum: a withdrawal either lands before the board's approvals
	// are read, or it finds the proposal being decided.
	p, c, err := e.claimFor(ctx, id, user, "withdraw")
	if err != nil {
		return p, err
	}
	defer e.release(ctx, c)
	p = e.withApprovals(ctx, p)
	if !p.Quorum.Multi() {
		return p, fmt.Errorf("withdraw from %s: %w: it needs one approval, so none is waiting", id, ErrNothingToWithdraw)
	}
	approvers, err := e.deps.Policies.WithdrawApproval(ctx, board.ApprovalChange{ProposalID: id, User: user, Channel: p.Thread.Channel.Key()})
	switch {
	case errors.Is(err, board.ErrProposalClosed):
		var done *board.Approval
		if err := e.howEnded(ctx, id, &done); err != nil {
			return p, err
		}
		return p, &DecidedError{State: board.ProposalApproved, BoardID: done.BoardID}
	case errors.Is(err, board.ErrNotFound):
		return p, fmt.Errorf("withdraw from %s: %w", id, ErrNothingToWithdraw)
	case err != nil:
		return p, unavailable("withdraw approval of "+string(id), err)
	}
	q := *p.Quorum
	q.Approvals = approvers
	p.Quorum = &q
	e.queuePost(p.Thread, "update preview", func(ctx context.Context, poster Poster) error {
		return e.updatePreview(ctx, poster, p)
	}, "proposal", p.ID)
	return p, nil
}

// withApprovals fills in who has approved a proposal that needs several
// approvals, from Postgres (the Redis copy holds the policy, not the
// approvals, which arrive concurrently).
func (e *Engine) withApprovals(ctx context.Context, p board.Proposal) board.Proposal {
	ps := e.deps.Policies
	if !p.Quorum.Multi() || ps == nil {
		return p
	}
	users, err := ps.Approvals(ctx, p.ID)
	if err != nil {
		e.logger.Warn("read approvals", "proposal", p.ID, "err", err)
		return p
	}
	q := *p.Quorum
	q.Approvals = users
	p.Quorum = &q
	return p
}

func deref(a *board.Approval) board.Approval {
	if a == nil {
		return board.Approval{}
	}
	return *a
}
