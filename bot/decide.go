package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
)

// decideTimeout bounds one approval or cancellation, which runs to its
// end even when its caller leaves.
const decideTimeout = 30 * time.Second

// recordApprovalInRedis writes an approval's decision to Redis off the approver's
// path, retrying a few times: until it lands, readers see the decision
// through committed, and the claim it holds keeps every other decision
// out.
func (e *Engine) recordApprovalInRedis(p board.Proposal) {
	e.out.runTracked(func(halt context.Context) {
		var err error
		for attempt := range 3 {
			if attempt > 0 {
				select {
				case <-halt.Done():
					return
				case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
				}
			}
			ctx, cancel := context.WithTimeout(halt, 5*time.Second)
			err = e.deps.Proposals.PutDecision(ctx, p)
			cancel()
			if err == nil {
				return
			}
		}
		// The board exists and Postgres says approved; reads fall back to
		// Postgres while the claim lasts, and the next decision attempt
		// finds the approval there.
		e.logger.Warn("record approval in redis", "proposal", p.ID, "err", err)
	})
}

// mayDecide says whether user may approve, revise or cancel p.
func (e *Engine) mayDecide(p board.Proposal, user string) bool {
	return e.cfg.AnyMemberMayDecide || user == p.RequestedBy || slices.Contains(e.cfg.Admins, user) || e.decidesIn(p.Thread.Channel.Key(), user)
}

// decidable checks that p is pending and that user may decide it now.
// ErrExpired, *DecidedError or ErrForbidden otherwise; a refusal is
// audited.
func (e *Engine) decidable(ctx context.Context, p board.Proposal, user, action string) error {
	switch {
	case p.State == board.ProposalPending && !e.deps.Now().Before(p.ExpiresAt):
		return fmt.Errorf("proposal %s: %w", p.ID, ErrExpired)
	case p.State == board.ProposalPending:
	case p.State == board.ProposalExpired:
		return fmt.Errorf("proposal %s: %w", p.ID, ErrExpired)
	default:
		return &DecidedError{State: p.State, By: p.DecidedBy, BoardID: p.BoardID}
	}
	if err := e.mayAct(ctx, p, user, action); err != nil {
		e.audit(ctx, board.AuditEvent{Actor: user, Action: "denied", Channel: p.Thread.Channel.Key(), ProposalID: p.ID},
			map[string]any{"attempted": action, "version": p.Version, "reason": err.Error()})
		return err
	}
	return nil
}

// pendingForDecision loads a proposal and checks that user may decide it
// now. ErrNotFound, ErrExpired, *DecidedError or ErrForbidden otherwise.
func (e *Engine) pendingForDecision(ctx context.Context, id board.ProposalID, user, action string) (board.Proposal, error) {
	p, err := e.Proposal(ctx, id)
	if err != nil {
		return board.Proposal{}, err
	}
	return p, e.decidable(ctx, p, user, action)
}

// Authorize reports whether user may decide the pending proposal id, and
// returns it. Slack asks before it opens the Revise dialog.
func (e *Engine) Authorize(ctx context.Context, id board.ProposalID, user string) (board.Proposal, error) {
	return e.pendingForDecision(ctx, id, user, "decide")
}

// Approve executes a pending proposal's plan, once: one Redis round trip
// claims and loads the proposal, one Postgres transaction writes the board
// with the decision and its audit, and the answer goes back; Redis learns
// the decision just after (recordApprovalInRedis), and reads in between see it
// from Postgres (committed). The first approver wins; every later
// approve or cancel gets a *DecidedError naming the state and board, and
// so does approving a version of a request another version of which was
// approved, or approving one a cancel, expiry or revision closed first
// (Postgres's compare-and-set decides, even when the claim was lost). When
// the execution fails the claim is given back, so approving again can
// succeed.
func (e *Engine) Approve(ctx context.Context, id board.ProposalID, user string) (board.Approval, error) {
	// A decision once started is finished, whether or not its caller
	// waits (a closed browser, a server shutting down): it commits and is
	// answered, or fails and changes nothing; never half.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), decideTimeout)
	defer cancel()
	arrived := time.Now()
	p, c, err := e.claimFor(ctx, id, user, "approve")
	if p.Quorum.Multi() && (err == nil || beingDecided(err)) {
		// Several approvals needed: quorum.go records this one and
		// returns with the claim held only when it completes the quorum.
		var done *board.Approval
		if p, c, done, err = e.approveQuorum(ctx, p, c, user); done != nil || err != nil {
			return deref(done), err
		}
	}
	if err != nil {
		return board.Approval{}, err
	}
	detail, _ := json.Marshal(withVia(ctx, map[string]any{"version": p.Version, "supersedes": p.Supersedes, "chain": p.ChainID(), "quorum": p.Quorum}))
	events := e.approvalEvents(p, user) // written with the approval
	res, err := e.deps.Decisions.Execute(ctx, board.Execution{
		ProposalID: id, Chain: p.ChainID(), Channel: p.Thread.Channel.Key(), Thread: p.Thread.ID, RequestedBy: p.RequestedBy,
		ApprovedBy: user, Plan: p.Plan,
		Audit:  []board.AuditEvent{{Actor: user, Action: "approved", Channel: p.Thread.Channel.Key(), ProposalID: id, Detail: detail}},
		Events: events,
	})
	if err != nil {
		e.release(ctx, c)
		var other *board.OtherVersionApprovedError
		switch {
		case errors.Is(err, board.ErrNoTargetBoard):
			return board.Approval{}, fmt.Errorf("approve %s: this channel has no board to add the cards to any more: %w", id, err)
		case errors.As(err, &other):
			return board.Approval{}, &DecidedError{State: "closed", Other: other.ProposalID}
		case errors.Is(err, board.ErrProposalClosed):
			// Closed first (a cancel, an expiry or a revision won the
			// compare-and-set): name how.
			return board.Approval{}, e.lostTo(ctx, p)
		}
		return board.Approval{}, unavailable("approve "+string(id), err)
	}
	// The claim is left to run out: Postgres now refuses every other
	// decision, and Redis learns of this one below.
	c.end()
	e.observe().Committed(time.Since(arrived))
	e.observe().ProposalClosed(board.ProposalApproved)
	e.logger.Debug("proposal approved", "proposal", id, "board", res.BoardID, "replayed", res.Replayed)
	now := e.deps.Now()
	p.State, p.DecidedBy, p.DecidedAt = board.ProposalApproved, user, now
	p.BoardID, p.BoardURL = res.BoardID, board.BoardURL(e.cfg.PublicURL, res.BoardID)
	e.recordApprovalInRedis(p)
	e.emitApproval(ctx, p, events != nil, res.Replayed)
	text := approvalText(user, now, p, res)
	e.queuePost(p.Thread, "announce approval", func(ctx context.Context, poster Poster) error {
		return errors.Join(e.updatePreview(ctx, poster, p), poster.Reply(ctx, p.Thread, board.Reply{Kind: board.ReplyInfo, Text: text, BoardURL: p.BoardURL}))
	}, "proposal", id, "board", res.BoardID)
	return board.Approval{ProposalID: id, BoardID: res.BoardID, BoardURL: p.BoardURL}, nil
}

// Cancel closes a pending proposal without writing anything, giving no
// reason (CancelWithReason).
func (e *Engine) Cancel(ctx context.Context, id board.ProposalID, user string) (board.Proposal, error) {
	return e.CancelWithReason(ctx, id, user, "")
}

// finish records a closed proposal everywhere; the caller holds its claim
// c, which stays taken so nothing else decides it. What decides is
// Postgres's compare-and-set under the chain's lock (SetProposalState): a
// proposal approved or closed meanwhile, even by a decision whose claim
// ran out, is answered with a *DecidedError naming its state, and nothing
// is recorded or announced.
func (e *Engine) finish(ctx context.Context, c *claim, p board.Proposal, state board.ProposalState, user, action string) (board.Proposal, error) {
	rec := e.record(p)
	closed := p
	closed.State, closed.DecidedBy, closed.DecidedAt = state, user, e.deps.Now()
	rec.Events = e.encodeEvents(closed)
	if err := e.deps.Decisions.SetProposalState(ctx, rec, string(state), user); err != nil {
		e.release(ctx, c)
		if errors.Is(err, board.ErrProposalClosed) {
			return p, e.lostTo(ctx, p)
		}
		return p, unavailable(action+" "+string(p.ID), err)
	}
	p.State, p.DecidedBy, p.DecidedAt = state, user, e.deps.Now()
	e.observe().ProposalClosed(state)
	e.logger.Debug("proposal "+action, "proposal", p.ID)
	if err := e.deps.Proposals.PutDecision(ctx, p); err != nil {
		e.logger.Warn("record "+action+" in redis", "proposal", p.ID, "err", err)
	}
	c.end()
	e.audit(ctx, board.AuditEvent{Actor: user, Action: action, Channel: p.Thread.Channel.Key(), ProposalID: p.ID},
		withReason(map[string]any{"version": p.Version, "supersedes": p.Supersedes}, p))
	if rec.Events != nil {
		e.wakeEvents() // written with the state
	} else {
		e.emit(ctx, p, false)
	}
	e.queuePost(p.Thread, "update preview", func(ctx context.Context, poster Poster) error {
		return errors.Join(e.updatePreview(ctx, poster, p), e.announceReason(ctx, poster, p))
	}, "proposal", p.ID)
	return p, nil
}

// lostTo answers a close that lost Postgres's compare-and-set with how p
// was decided, and gives Redis that decision when it still had p pending:
// the winner's own write to Redis may never have landed (a crash just
// after its commit), and Redis must not offer p's buttons again.
func (e *Engine) lostTo(ctx context.Context, p board.Proposal) error {
	rec, err := e.deps.History.Proposal(ctx, p.ID)
	if err != nil || rec.State == string(board.ProposalPending) {
		return &DecidedError{State: beingDecidedState}
	}
	if p.State == board.ProposalPending {
		won := p
		won.State, won.DecidedBy, won.DecidedAt, won.BoardID = board.ProposalState(rec.State), rec.DecidedBy, rec.DecidedAt, rec.BoardID
		if rec.BoardID != "" {
			won.BoardURL = board.BoardURL(e.cfg.PublicURL, rec.BoardID)
		}
		if err := e.deps.Proposals.PutDecision(ctx, won); err != nil {
			e.logger.Warn("record decision in redis", "proposal", p.ID, "err", err)
		}
	}
	return &DecidedError{State: board.ProposalState(rec.State), By: rec.DecidedBy, BoardID: rec.BoardID}
}

// record is p as Postgres records it: what SetProposalState names the
// proposal and its chain by, and writes, closed, when Postgres has no
// record of it.
func (e *Engine) record(p board.Proposal) board.ProposalRecord {
	plan, _ := json.Marshal(p.Plan)
	return board.ProposalRecord{
		ID: p.ID, Chain: p.ChainID(), Channel: p.Thread.Channel.Key(), Version: p.Version, Supersedes: p.Supersedes,
		RequestedBy: p.RequestedBy, Plan: plan, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt,
	}
}

// Revise queues a re-plan of a pending proposal with the user's feedback;
// the new proposal supersedes it. Two revisions at once make one new
// version, and approving the proposal meanwhile drops the revision.
func (e *Engine) Revise(ctx context.Context, id board.ProposalID, user, feedback string) (board.RequestID, error) {
	feedback = strings.TrimSpace(feedback)
	if feedback == "" {
		return "", errors.New("revise: say what to change")
	}
	p, err := e.pendingForDecision(ctx, id, user, "revise")
	if err != nil {
		return "", err
	}
	return e.Submit(ctx, board.Request{Thread: p.Thread, User: user, Text: feedback, Revises: id, Feedback: feedback})
}

// ProposeAgain offers an expired proposal's plan again as a new pending
// proposal, after validating it against the board as it is now.
func (e *Engine) ProposeAgain(ctx context.Context, id board.ProposalID, user string) (board.RequestID, error) {
	p, err := e.Proposal(ctx, id)
	if err != nil {
		return "", err
	}
	if p.State != board.ProposalExpired {
		return "", &DecidedError{State: p.State, By: p.DecidedBy, BoardID: p.BoardID}
	}
	if err := e.mayAct(ctx, p, user, "propose again"); err != nil {
		return "", err
	}
	return e.Submit(ctx, board.Request{Thread: p.Thread, User: user, Text: "propose again", Again: id})
}
