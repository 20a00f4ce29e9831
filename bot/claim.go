package bot

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
)

// claim is a decision's hold on a proposal in Redis: the holder it was
// taken as, unique to this one decision, and the renewal that keeps it
// while the decision works. A claim lives ClaimTTL unless renewed, so a
// crashed holder's claim frees itself within seconds, while a decision
// may take up to decideTimeout (a stalled Postgres). Redis's claim only
// keeps a second decision from starting; what decides is Postgres's
// compare-and-set under the chain's lock, which holds however long either
// takes.
type claim struct {
	id     board.ProposalID
	holder string
	stop   context.CancelFunc
	done   chan struct{}
}

// newHolder names a claim for one decision: a fresh token, then what
// holderMayDecide reads ("approve:U123"; "expire" for the sweeper), so
// that a decision gives back or renews only its own claim, never one taken
// by the same person's second click or by anyone after its own ran out.
func newHolder(action, user string) string {
	if user == "" {
		return board.NewShortID("c_") + " " + action
	}
	return board.NewShortID("c_") + " " + action + ":" + user
}

// claim takes the claim of a proposal for action by user, and keeps it
// while the caller works; nil when someone else holds it.
func (e *Engine) claim(ctx context.Context, id board.ProposalID, action, user string) (*claim, error) {
	holder := newHolder(action, user)
	ok, err := e.deps.Proposals.Claim(ctx, id, holder, e.cfg.ClaimTTL)
	if err != nil || !ok {
		return nil, err
	}
	return e.keep(id, holder), nil
}

// keep renews a claim just taken every third of ClaimTTL until the
// decision ends it (end or release), or for decideTimeout at most: no
// decision works longer.
func (e *Engine) keep(id board.ProposalID, holder string) *claim {
	ctx, cancel := context.WithTimeout(context.Background(), decideTimeout)
	c := &claim{id: id, holder: holder, stop: cancel, done: make(chan struct{})}
	every := max(e.cfg.ClaimTTL/3, time.Millisecond)
	go func() {
		defer close(c.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, every)
			err := e.deps.Proposals.RenewClaim(rctx, id, holder, e.cfg.ClaimTTL)
			rcancel()
			switch {
			case errors.Is(err, ErrNotHolder):
				// Lost (Redis restarted, or a pause longer than the TTL):
				// Postgres still decides between this decision and the next.
				e.logger.Warn("claim lost while deciding", "proposal", id)
				return
			case err != nil && ctx.Err() == nil:
				e.logger.Warn("renew claim", "proposal", id, "err", err)
			}
		}
	}()
	return c
}

// end stops renewing the claim and leaves it to run out: a decided
// proposal's claim keeps later decisions out until Redis has its state.
func (c *claim) end() {
	if c == nil {
		return
	}
	c.stop()
	<-c.done
}

// release ends the claim and gives it back, so that deciding again can
// succeed at once.
func (e *Engine) release(ctx context.Context, c *claim) {
	if c == nil {
		return
	}
	c.end()
	// Given back even when the caller has gone: a claim left behind would
	// answer "being decided" until it expires.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := e.deps.Proposals.Release(ctx, c.id, c.holder)
	switch {
	case errors.Is(err, ErrNotHolder):
		e.logger.Warn("release claim: it ran out and is not ours any more", "proposal", c.id)
	case err != nil:
		e.logger.Warn("release claim", "proposal", c.id, "err", err)
	}
}

// claimFor takes the decision lock of a proposal and loads it, in one
// Redis round trip, and checks that user may decide it. On success the
// caller holds the returned claim; on any error nothing is held. A claim
// held by someone who may not decide is tried again for a moment
// (claimWaits).
func (e *Engine) claimFor(ctx context.Context, id board.ProposalID, user, action string) (board.Proposal, *claim, error) {
	holder := newHolder(action, user)
	for attempt := 0; ; attempt++ {
		p, claimed, err := e.deps.Proposals.ClaimProposal(ctx, id, holder, e.cfg.ClaimTTL)
		if errors.Is(err, ErrNotFound) {
			// Redis let it go: Postgres knows how it ended.
			p, err := e.proposalFromHistory(ctx, id)
			if err != nil {
				return board.Proposal{}, nil, err
			}
			return p, nil, e.decidable(ctx, p, user, action)
		}
		if err != nil {
			return board.Proposal{}, nil, unavailable("claim proposal", err)
		}
		if claimed {
			c := e.keep(id, holder)
			if err := e.decidable(ctx, p, user, action); err != nil {
				e.release(ctx, c)
				return p, nil, err
			}
			return p, c, nil
		}
		if p.State != board.ProposalPending {
			return p, nil, e.decidable(ctx, p, user, action)
		}
		if p.Quorum.Multi() {
			// approveQuorum records approvals while another holds the claim.
			return p, nil, e.heldBy(ctx, p)
		}
		if attempt == 0 {
			// Someone who may not decide hears so at once, whoever holds
			// the claim.
			if err := e.decidable(ctx, p, user, action); err != nil {
				return p, nil, err
			}
		}
		held := e.heldBy(ctx, p)
		if !beingDecided(held) || attempt == len(claimWaits) || e.holderMayDecide(ctx, p) {
			return p, nil, held
		}
		select {
		case <-ctx.Done():
			return p, nil, held
		case <-time.After(claimWaits[attempt]):
		}
	}
}

// holderMayDecide reports whether the claim p was found under is held by
// someone who may decide it: a decision that will go through (or fail on
// its own), not a refused one about to give the claim back.
func (e *Engine) holderMayDecide(ctx context.Context, p board.Proposal) bool {
	h := p.ClaimHolder
	if _, rest, ok := strings.Cut(h, " "); ok {
		h = rest // after the holder's token (newHolder)
	}
	action, user, ok := strings.Cut(h, ":")
	return !ok || e.mayAct(ctx, p, user, action) == nil
}

// claimWaits are the pauses before trying a held claim again, about a
// third of a second in all, when its holder may not decide: a refused
// decision gives its claim back at once, and the person who may decide,
// clicking at the same moment, goes ahead instead of hearing "being
// decided". A claim held by someone who may decide is answered at once
// (it is a decision in flight, or one a crash left behind), so a hundred
// people clicking together do not all wait and retry.
var claimWaits = []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond}

// heldBy explains why a proposal someone else holds cannot be decided
// now, from what was committed: a decision Redis has not caught up with
// (a crash between commit and update) is named as it is, and only a
// decision really in flight is "being decided". Claims free themselves
// within ClaimTTL of their holder's end, so that answer never lasts long.
// It also names the winner to the loser of a compare-and-set in Postgres.
func (e *Engine) heldBy(ctx context.Context, p board.Proposal) error {
	if rec, err := e.deps.History.Proposal(ctx, p.ID); err == nil && rec.State != string(board.ProposalPending) {
		return &DecidedError{State: board.ProposalState(rec.State), By: rec.DecidedBy, BoardID: rec.BoardID}
	}
	return &DecidedError{State: beingDecidedState}
}
