package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bobnet/bobnet/board"
)

// ReviewRunCard accepts a runner's card in Review or sends it back with a
// reason, if user may: whoever the channel's policy lets decide, as for a
// proposal, with the person who started the run as its requester (so
// under self_approval: false they cannot accept their own run's work).
// The thread is told. round is the round the decision was shown (a
// ReviewRef's Round) or board.AnyRound; a decision on an earlier round
// changes nothing. Errors: ErrNotFound, ErrForbidden (a *PolicyError),
// ErrStaleReview, board.ErrNotRunnable, ErrUnavailable.
func (e *Engine) ReviewRunCard(ctx context.Context, runID board.RunID, card board.CardID, round int, user string, accept bool, reason string) (board.CardUpdate, error) {
	rv := e.deps.Runs
	if rv == nil {
		return board.CardUpdate{}, ErrNoRuns
	}
	r, err := rv.Run(ctx, runID)
	if errors.Is(err, board.ErrNotFound) {
		return board.CardUpdate{}, fmt.Errorf("run %s: %w", runID, ErrNoRun)
	}
	if err != nil {
		return board.CardUpdate{}, unavailable("read the run", err)
	}
	cs, err := e.cardStore()
	if err != nil {
		return board.CardUpdate{}, err
	}
	b, _, err := cs.Board(ctx, r.Board)
	if err != nil {
		return board.CardUpdate{}, unavailable("read the board", err)
	}
	if err := e.mayReview(ctx, b, r, user); err != nil {
		e.audit(ctx, board.AuditEvent{Actor: user, Action: "run_review_refused", Channel: b.Channel, BoardID: b.ID},
			map[string]any{"run_id": r.ID, "card": card, "reason": err.Error()})
		return board.CardUpdate{}, err
	}
	up, err := rv.ReviewRunCard(ctx, runID, card, round, user, accept, reason)
	switch {
	case errors.Is(err, board.ErrNotRunnable), errors.Is(err, ErrStaleReview):
		return board.CardUpdate{}, err
	case err != nil:
		return board.CardUpdate{}, unavailable("review", err)
	}
	verdict := "accepted by " + user
	if !accept {
		verdict = fmt.Sprintf("sent back by %s: “%s”. It is worked again with that reason", user, reason)
	}
	ref := &board.ReviewRef{Run: r.ID, Card: card, Handle: up.Card.Handle, Decision: ReviewAccepted, By: user}
	if !accept {
		ref.Decision, ref.Reason = ReviewSentBack, reason
	}
	text := fmt.Sprintf("%s “%s” %s.", up.Card.Handle, up.Card.Title, verdict)
	e.tellOn(b, func(board.Source) string { return text }, RunURL(e.cfg.PublicURL, r), ref)
	e.showRun(r.ID, b)
	return up, nil
}

// ReviewByHandle is ReviewRunCard for chat: the card by its handle (or
// title), on the board of the channel, in its running run.
func (e *Engine) ReviewByHandle(ctx context.Context, ch board.Channel, user, ref string, accept bool, reason string) (board.CardUpdate, error) {
	cs, err := e.cardStore()
	if err != nil {
		return board.CardUpdate{}, err
	}
	c, err := e.resolveCard(ctx, cs, ch, ref)
	if err != nil {
		return board.CardUpdate{}, err
	}
	if e.deps.Runs == nil {
		return board.CardUpdate{}, ErrNoRuns
	}
	runs, err := e.deps.Runs.Runs(ctx, c.BoardID, 1)
	if err != nil {
		return board.CardUpdate{}, unavailable("read the runs", err)
	}
	if len(runs) == 0 || runs[0].State != board.RunRunning {
		return board.CardUpdate{}, fmt.Errorf("%w: the board has no run going", board.ErrNotRunnable)
	}
	return e.ReviewRunCard(ctx, runs[0].ID, c.ID, board.AnyRound, user, accept, reason)
}

// mayReview applies the board channel's policy to a review, the run's
// starter standing as its requester.
func (e *Engine) mayReview(ctx context.Context, b board.Board, r board.Run, user string) error {
	ch := channelOf(b.Channel)
	p := board.Proposal{ID: board.ProposalID("review of " + string(r.ID)), Thread: board.Thread{Channel: ch, ID: b.Thread}, RequestedBy: r.StartedBy}
	q, err := e.quorumFor(ctx, ch, 0, nil, nil)
	if err != nil {
		return err
	}
	p.Quorum = q
	if err := e.mayAct(ctx, p, user, "approve"); err != nil {
		// mayAct speaks of proposals; say the same of the review.
		why := strings.TrimPrefix(err.Error(), fmt.Sprintf("approve proposal %s: ", p.ID))
		return &reviewRefusal{text: fmt.Sprintf("review in run %d: %s", r.Number, why), err: err}
	}
	return nil
}

// reviewRefusal is a policy's refusal of a review; it matches what mayAct
// refused with (ErrForbidden).
type reviewRefusal struct {
	text string
	err  error
}

func (e *reviewRefusal) Error() string { return e.text }
func (e *reviewRefusal) Unwrap() error { return e.err }
