package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
)

// proposeAgain re-offers an expired proposal's plan without asking the
// model, after validating it against the channel's board as it is now.
func (e *Engine) proposeAgain(ctx context.Context, r board.Request, id board.ProposalID) (*board.Reply, *board.Proposal, string) {
	old, err := e.Proposal(ctx, id)
	if err != nil {
		return &board.Reply{Kind: board.ReplyError, Text: "I can't propose that again. " + Explain(err)}, nil, "cannot propose again: " + Explain(err)
	}
	opts, target := e.checkOptions(ctx, r.Thread.Channel.Key())
	raw, _ := json.Marshal(old.Plan)
	res := plan.CheckJSON(raw, opts)
	if !res.Valid {
		msg := fmt.Sprintf("That plan no longer fits this channel (%s: %s), so I can't propose it again. Ask me for a new plan.", res.Errors[0].Path, res.Errors[0].Message)
		return &board.Reply{Kind: board.ReplyError, Text: msg}, nil, msg
	}
	r.Text = old.Request // the preview shows what was originally asked
	// It stays the requester's plan, whoever clicked: the self-approval
	// rule and "the requester may decide" look at RequestedBy.
	_, p, err := e.propose(ctx, r, old.RequestedBy, *res.Plan, res.Warnings, nil, target, nil)
	if err != nil {
		e.logger.Warn("store proposal", "request", r.ID, "err", err)
		return &board.Reply{Kind: board.ReplyError, Text: "I couldn't store the proposal. " + Explain(err)}, nil, failNotStored
	}
	e.audit(ctx, board.AuditEvent{Actor: r.User, Action: "proposed_again", Channel: r.Thread.Channel.Key(), ProposalID: p.ID},
		map[string]any{"expired": id, "version": p.Version})
	return nil, p, ""
}

// propose stores a new pending proposal, with an id derived from the
// request so that planning it again writes the same one. With prev it is
// prev's next version: prev is claimed first, so two revisions at once
// make one new version and a revision of a proposal approved meanwhile is
// dropped (and says so) instead of becoming a second approvable version.
// requester is whose plan it is (prev's requester wins), not
// necessarily r.User, who may only have asked for it again.
func (e *Engine) propose(ctx context.Context, r board.Request, requester string, env plan.Envelope, warnings []plan.Issue, prev *board.Proposal, target board.ID, pol *policyRead) (*board.Reply, *board.Proposal, error) {
	now := e.deps.Now()
	p := board.Proposal{
		ID: board.ProposalIDFor(r.ID), Version: 1, RequestID: r.ID, Thread: r.Thread, RequestedBy: requester, Request: r.Text,
		Plan: env, Warnings: warnings, State: board.ProposalPending, CreatedAt: now, ExpiresAt: now.Add(e.cfg.ProposalTTL), TargetBoard: target,
	}
	if p.Warnings == nil {
		p.Warnings = []plan.Issue{}
	}
	p.BoardChanges = e.boardChanges(ctx, env, target)
	var held *claim
	if prev != nil {
		var err error
		if held, err = e.claim(ctx, prev.ID, "supersede", string(p.ID)); err != nil {
			return nil, nil, unavailable("claim previous version", err)
		}
		defer held.end()
		cur, cerr := e.Proposal(ctx, prev.ID)
		if held == nil || cerr != nil || cur.State != board.ProposalPending {
			e.release(ctx, held)
			why := fmt.Sprintf("v%d was decided while I was revising it", prev.Version)
			if cerr == nil && cur.State != board.ProposalPending {
				why = fmt.Sprintf("v%d was %s", prev.Version, cur.State)
				if cur.DecidedBy != "" {
					why += " by " + cur.DecidedBy
				}
				why += " while I was revising it"
			}
			e.audit(ctx, board.AuditEvent{Actor: r.User, Action: "revision_dropped", Channel: r.Thread.Channel.Key(), ProposalID: prev.ID},
				map[string]any{"request_id": r.ID, "version": prev.Version})
			return &board.Reply{Kind: board.ReplyInfo, Text: "I dropped this revision: " + why + ", so nothing new needs deciding."}, nil, nil
		}
		p.Version, p.Supersedes, p.Request, p.RequestedBy = prev.Version+1, prev.ID, prev.Request, prev.RequestedBy
		p.Chain = prev.ChainID()
		p.Changes = Diff(prev.Plan, env)
	}
	planJSON, _ := json.Marshal(env)
	q, err := e.quorumFor(ctx, r.Thread.Channel, env.Stats().Cards, prev, pol)
	if err != nil {
		if prev != nil {
			e.release(ctx, held)
		}
		return nil, nil, err
	}
	p.Quorum = q
	policyJSON, _ := json.Marshal(q)
	if q == nil {
		policyJSON = nil
	}
	err = e.deps.History.SaveProposal(ctx, board.ProposalRecord{
		ID: p.ID, Chain: p.ChainID(), Channel: r.Thread.Channel.Key(), Version: p.Version, Supersedes: p.Supersedes,
		RequestedBy: p.RequestedBy, State: string(board.ProposalPending), Plan: planJSON, CreatedAt: now, ExpiresAt: p.ExpiresAt, Policy: policyJSON,
	})
	if errors.Is(err, board.ErrProposalExists) {
		saved, done, aerr := e.adoptSaved(ctx, p, prev)
		if aerr != nil || done {
			if prev != nil {
				e.release(ctx, held)
			}
			if saved != nil {
				// Stored by another worker, which may be posting it: the
				// post reads it back rather than trusting this copy.
				adopted := *saved
				adopted.Reposting = true
				saved = &adopted
			}
			return nil, saved, aerr
		}
		p, err = *saved, nil
	}
	if err != nil {
		if prev != nil {
			e.release(ctx, held)
		}
		return nil, nil, unavailable("save proposal", err)
	}
	// The audit row goes to Postgres while the proposal goes to Redis: it
	// needs only the saved proposal, and its key keeps it to one row
	// when a failed store has the request planned again.
	st := env.Stats()
	audited := make(chan struct{})
	go func() {
		defer close(audited)
		e.audit(ctx, board.AuditEvent{Actor: r.User, Action: "proposed", Channel: r.Thread.Channel.Key(), ProposalID: p.ID, DedupeKey: "proposed:" + string(p.ID)},
			map[string]any{"request_id": r.ID, "version": p.Version, "supersedes": p.Supersedes, "cards": st.Cards, "links": st.Links})
	}()
	err = e.deps.Proposals.PutProposal(ctx, p)
	<-audited
	if err != nil {
		if prev != nil {
			e.release(ctx, held)
		}
		return nil, nil, err
	}
	e.emit(ctx, p, false)
	if prev != nil {
		if cur, err := e.Proposal(ctx, prev.ID); err == nil && cur.State == board.ProposalPending {
			if _, err := e.finish(ctx, held, cur, board.ProposalSuperseded, r.User, "superseded"); err != nil {
				e.logger.Warn("supersede previous version", "proposal", prev.ID, "err", err)
			}
		}
	}
	return nil, &p, nil
}

// adoptSaved is propose's answer when p's id was saved before: the same
// request planned by another worker at the same time, or by this one
// before a crash. The plan saved first is kept, since its preview may be
// out already and an approval must execute what was previewed; the plan
// in hand is dropped. done is set when there is nothing left to store:
// Redis has the proposal (its writer finishes the rest), or it was decided.
func (e *Engine) adoptSaved(ctx context.Context, p board.Proposal, prev *board.Proposal) (saved *board.Proposal, done bool, err error) {
	if cur, err := e.deps.Proposals.Proposal(ctx, p.ID); err == nil {
		e.logger.Info("request planned twice; keeping the plan stored first", "request", p.RequestID, "proposal", p.ID)
		return &cur, true, nil
	} else if !errors.Is(err, ErrNotFound) {
		return nil, true, err
	}
	rec, err := e.deps.History.Proposal(ctx, p.ID)
	if err != nil {
		return nil, true, unavailable("read saved proposal", err)
	}
	if rec.State != string(board.ProposalPending) {
		hist, err := e.proposalFromHistory(ctx, p.ID)
		if err != nil {
			return nil, true, err
		}
		return &hist, true, nil
	}
	e.logger.Info("request planned again after a crash; keeping the plan saved first", "request", p.RequestID, "proposal", p.ID)
	var env plan.Envelope
	if err := json.Unmarshal(rec.Plan, &env); err != nil {
		return nil, true, fmt.Errorf("saved proposal %s: %w", p.ID, err)
	}
	mine, _ := json.Marshal(p.Plan)
	if stored, _ := json.Marshal(env); string(mine) != string(stored) {
		// The warnings were the dropped plan's; the saved one's are found
		// again as the model's plans are: checked against the board now.
		opts, _ := e.checkOptions(ctx, p.Thread.Channel.Key())
		p.Warnings = plan.CheckJSON(rec.Plan, opts).Warnings
		if p.Warnings == nil {
			p.Warnings = []plan.Issue{}
		}
		p.Plan = env
		p.BoardChanges = e.boardChanges(ctx, env, p.TargetBoard)
		if prev != nil {
			p.Changes = Diff(prev.Plan, env)
		}
	}
	p.CreatedAt, p.ExpiresAt = rec.CreatedAt, rec.ExpiresAt
	return &p, false, nil
}

// checkOptions are the options a stored plan is checked with against
// channel's board as it is now, and that board (none: "").
func (e *Engine) checkOptions(ctx context.Context, channel string) (plan.Options, board.ID) {
	opts := plan.Options{Profiles: planner.ProfileNames(e.cfg.Profiles)}
	var target board.ID
	if b, err := e.deps.Boards.ChannelBoard(ctx, channel); err == nil {
		opts.HasTargetBoard, target = true, b.ID
		if sum, err := e.deps.Boards.BoardSummary(ctx, b.ID); err == nil {
			opts.Board = sum.State
		}
	}
	return opts, target
}
