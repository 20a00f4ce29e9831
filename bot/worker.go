package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/planner"
)

// Run consumes the request queue with the configured workers, reclaims
// requests of dead workers and expires proposals, until ctx is done.
func (e *Engine) Run(ctx context.Context) error {
	for {
		err := e.deps.Queue.Init(ctx)
		if err == nil {
			break
		}
		e.logger.Warn("request queue not ready; retrying", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	var wg sync.WaitGroup
	for i := range e.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.work(ctx, fmt.Sprintf("%s-%d", e.cfg.ConsumerName, i))
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.sweep(ctx)
	}()
	wg.Wait()
	return nil
}

// work is one worker's loop: reclaim what dead workers left, then read.
func (e *Engine) work(ctx context.Context, consumer string) {
	lastReclaim := time.Time{}
	for ctx.Err() == nil {
		var batch []Delivery
		var err error
		if time.Since(lastReclaim) > e.cfg.ReclaimIdle/2 {
			lastReclaim = time.Now()
			batch, err = e.deps.Queue.Reclaim(ctx, consumer, e.cfg.ReclaimIdle)
			for _, d := range batch {
				e.logger.Info("reclaimed a request from a dead or stuck worker", "request", d.RequestID)
			}
		}
		if err == nil && len(batch) == 0 {
			batch, err = e.deps.Queue.Read(ctx, consumer, time.Second)
		}
		if err != nil {
			if ctx.Err() == nil {
				e.logger.Warn("read request queue", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		for _, d := range batch {
			if ctx.Err() != nil {
				return // unacked: another worker reclaims it
			}
			e.handle(ctx, d.RequestID)
			if ctx.Err() != nil {
				return
			}
			if err := e.deps.Queue.Ack(ctx, d.MessageID); err != nil {
				e.logger.Warn("ack request", "request", d.RequestID, "err", err)
			}
		}
	}
}

// handle plans one request and answers it in its thread.
func (e *Engine) handle(ctx context.Context, id RequestID) {
	rec, err := e.deps.Requests.Request(ctx, id)
	if err != nil {
		e.logger.Warn("load request", "request", id, "err", err)
		return
	}
	if rec.Status.State == RequestDone || rec.Status.State == RequestFailed {
		return // answered before its worker died; only the ack was lost
	}
	rec.Status.State = RequestPlanning
	_ = e.deps.Requests.PutRequest(ctx, rec)

	r := rec.Request
	reply, proposal, failure := e.plan(ctx, r)
	if ctx.Err() != nil {
		return // shutting down mid-plan: leave it for a reclaim
	}
	first, err := e.deps.Requests.MarkAnswered(ctx, id)
	if err != nil {
		e.logger.Warn("mark answered", "request", id, "err", err)
	}
	if err == nil && !first {
		return
	}
	poster := e.poster(r.Thread.Channel.Source)
	switch {
	case proposal != nil:
		ref, err := poster.PostPreview(ctx, *proposal)
		if err != nil {
			e.logger.Warn("post preview", "proposal", proposal.ID, "err", err)
		} else if ref != "" {
			proposal.Message = ref
			if err := e.deps.Proposals.PutProposal(ctx, *proposal); err != nil {
				e.logger.Warn("store preview ref", "proposal", proposal.ID, "err", err)
			}
		}
		rec.Status.ProposalID = proposal.ID
		rec.Status.Reply = &Reply{Kind: ReplyProposal, Text: proposal.Plan.Answer}
		e.remember(ctx, r, "assistant", fmt.Sprintf("(proposed %s v%d with %d cards)", proposal.ID, proposal.Version, proposal.Plan.Stats().Cards))
	case reply != nil:
		if err := poster.Reply(ctx, r.Thread, *reply); err != nil {
			e.logger.Warn("post reply", "request", id, "err", err)
		}
		rec.Status.Reply = reply
		e.remember(ctx, r, "assistant", reply.Text)
	}
	rec.Status.State = RequestDone
	if failure != "" {
		rec.Status.State, rec.Status.Error = RequestFailed, failure
	}
	if err := e.deps.Requests.PutRequest(ctx, rec); err != nil {
		e.logger.Warn("store request status", "request", id, "err", err)
	}
}

func threadKey(t Thread) string { return t.Channel.Key() + ":" + t.ID }

func (e *Engine) remember(ctx context.Context, r Request, role, text string) {
	if err := e.deps.Requests.AppendTurn(ctx, threadKey(r.Thread), planner.Turn{Role: role, User: r.User, Text: text}); err != nil {
		e.logger.Warn("remember thread turn", "err", err)
	}
}

// plan turns a request into a reply or a proposal; failure is set when the
// request failed (its reply says why, kindly).
func (e *Engine) plan(ctx context.Context, r Request) (reply *Reply, proposal *Proposal, failure string) {
	ch := r.Thread.Channel.Key()
	var prev *Proposal
	if id := r.Revises; id != "" {
		p, err := e.pendingForDecision(ctx, id, r.User, "revise")
		if err != nil {
			return &Reply{Kind: ReplyError, Text: "I can't revise that proposal: " + describe(err)}, nil, err.Error()
		}
		prev = &p
	}
	if id := r.Again; id != "" {
		return e.proposeAgain(ctx, r, id)
	}

	in := planner.PromptInput{Profiles: e.cfg.Profiles, Message: r.Text}
	hasBoard := false
	var target board.ID
	if b, err := e.deps.Boards.ChannelBoard(ctx, ch); err == nil {
		if sum, err := e.deps.Boards.BoardSummary(ctx, b.ID); err == nil {
			in.Board, hasBoard, target = &sum, true, b.ID
		}
	} else if !errors.Is(err, board.ErrNotFound) {
		return &Reply{Kind: ReplyError, Text: "I can't reach the board database right now, so I can't plan. Please try again in a minute."}, nil, err.Error()
	}
	if turns, err := e.deps.Requests.Turns(ctx, threadKey(r.Thread)); err == nil {
		in.History = turns
	}
	if prev != nil {
		in.PreviousPlan, in.Feedback, in.Message = &prev.Plan, r.Feedback, prev.Request
	}
	e.remember(ctx, r, "user", r.Text)

	opts := planner.Options{Profiles: planner.ProfileNames(e.cfg.Profiles), HasTargetBoard: hasBoard}
	if in.Board != nil {
		opts.Board = in.Board.State
	}
	out, err := e.deps.Planner.Plan(ctx, in, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ""
		}
		return e.planFailure(ctx, r, err)
	}
	env := out.Result.Plan
	switch env.Kind {
	case planner.KindAnswer, planner.KindRefuse:
		return &Reply{Kind: ReplyKind(env.Kind), Text: env.Answer}, nil, ""
	case planner.KindClarify:
		return &Reply{Kind: ReplyClarify, Text: env.Answer, Questions: env.ClarifyingQuestions}, nil, ""
	}
	p, err := e.propose(ctx, r, *env, out.Result.Warnings, prev, target)
	if err != nil {
		return &Reply{Kind: ReplyError, Text: "I drafted a plan but couldn't store it: " + describe(err) + " Nothing was changed; please try again."}, nil, err.Error()
	}
	return nil, &p, ""
}

// planFailure turns a planner error into a friendly reply, keeping the raw
// output of an invalid plan in the audit log for debugging.
func (e *Engine) planFailure(ctx context.Context, r Request, err error) (*Reply, *Proposal, string) {
	var inv *planner.InvalidOutputError
	switch {
	case errors.As(err, &inv):
		first := "the output was not a plan"
		if len(inv.Errors) > 0 {
			first = strings.TrimPrefix(inv.Errors[0].Path+": ", ": ") + inv.Errors[0].Message
		}
		e.audit(ctx, board.AuditEvent{Actor: r.User, Action: "plan_failed", Channel: r.Thread.Channel.Key()},
			map[string]any{"request_id": r.ID, "raw": inv.Raw, "errors": inv.Errors})
		return &Reply{Kind: ReplyError, Text: "I couldn't turn that into a valid plan (" + first + "). Nothing was changed; try rephrasing the request."}, nil, err.Error()
	case errors.Is(err, planner.ErrTimeout):
		return &Reply{Kind: ReplyError, Text: "The model took too long to answer, so nothing was planned. Please try again; a smaller request may help."}, nil, err.Error()
	default:
		return &Reply{Kind: ReplyError, Text: "I can't reach the model server, so I can't plan right now. Check that it is running and that OPENAI_BASE_URL points at it (" + err.Error() + ")."}, nil, err.Error()
	}
}

// proposeAgain re-offers an expired proposal's plan without asking the
// model, after validating it against the channel's board as it is now.
func (e *Engine) proposeAgain(ctx context.Context, r Request, id ProposalID) (*Reply, *Proposal, string) {
	old, err := e.Proposal(ctx, id)
	if err != nil {
		return &Reply{Kind: ReplyError, Text: "I can't find that proposal any more: " + describe(err)}, nil, err.Error()
	}
	hasBoard := false
	var target board.ID
	opts := planner.Options{Profiles: planner.ProfileNames(e.cfg.Profiles)}
	if b, err := e.deps.Boards.ChannelBoard(ctx, r.Thread.Channel.Key()); err == nil {
		hasBoard, target = true, b.ID
		if sum, err := e.deps.Boards.BoardSummary(ctx, b.ID); err == nil {
			opts.Board = sum.State
		}
	}
	opts.HasTargetBoard = hasBoard
	raw, _ := json.Marshal(old.Plan)
	res := planner.CheckJSON(raw, opts)
	if !res.Valid {
		msg := fmt.Sprintf("That plan no longer fits this channel (%s: %s), so I can't propose it again. Ask me for a new plan.", res.Errors[0].Path, res.Errors[0].Message)
		return &Reply{Kind: ReplyError, Text: msg}, nil, msg
	}
	r.Text = old.Request // the preview shows what was originally asked
	p, err := e.propose(ctx, r, *res.Plan, res.Warnings, nil, target)
	if err != nil {
		return &Reply{Kind: ReplyError, Text: "I couldn't store the proposal: " + describe(err)}, nil, err.Error()
	}
	e.audit(ctx, board.AuditEvent{Actor: r.User, Action: "proposed_again", Channel: r.Thread.Channel.Key(), ProposalID: string(p.ID)},
		map[string]any{"expired": id, "version": p.Version})
	return nil, &p, ""
}

// propose stores a new pending proposal; with prev it is prev's next
// version, lists what changed, and supersedes prev.
func (e *Engine) propose(ctx context.Context, r Request, plan planner.Envelope, warnings []planner.Issue, prev *Proposal, target board.ID) (Proposal, error) {
	now := e.deps.Now()
	p := Proposal{
		ID: ProposalID(newID("p_")), Version: 1, RequestID: r.ID, Thread: r.Thread, RequestedBy: r.User, Request: r.Text,
		Plan: plan, Warnings: warnings, State: ProposalPending, CreatedAt: now, ExpiresAt: now.Add(e.cfg.ProposalTTL), TargetBoard: target,
	}
	if p.Warnings == nil {
		p.Warnings = []planner.Issue{}
	}
	p.BoardChanges = e.boardChanges(ctx, plan, target)
	if prev != nil {
		p.Version, p.Supersedes, p.Request, p.RequestedBy = prev.Version+1, prev.ID, prev.Request, prev.RequestedBy
		p.Changes = Diff(prev.Plan, plan)
	}
	planJSON, _ := json.Marshal(plan)
	if err := e.deps.Boards.SaveProposal(ctx, board.ProposalRecord{
		ID: string(p.ID), Channel: r.Thread.Channel.Key(), Version: p.Version, Supersedes: string(p.Supersedes),
		RequestedBy: p.RequestedBy, State: string(ProposalPending), Plan: planJSON, CreatedAt: now, ExpiresAt: p.ExpiresAt,
	}); err != nil {
		return Proposal{}, unavailable("save proposal", err)
	}
	if err := e.deps.Proposals.PutProposal(ctx, p); err != nil {
		return Proposal{}, err
	}
	st := plan.Stats()
	e.audit(ctx, board.AuditEvent{Actor: r.User, Action: "proposed", Channel: r.Thread.Channel.Key(), ProposalID: string(p.ID)},
		map[string]any{"request_id": r.ID, "version": p.Version, "supersedes": p.Supersedes, "cards": st.Cards, "links": st.Links})
	if prev != nil {
		if err := e.claim(ctx, prev.ID, "supersede:"+string(p.ID)); err != nil {
			e.logger.Warn("supersede previous version", "proposal", prev.ID, "err", err)
		} else if cur, err := e.Proposal(ctx, prev.ID); err == nil && cur.State == ProposalPending {
			if _, err := e.finish(ctx, cur, ProposalSuperseded, r.User, "superseded"); err != nil {
				e.logger.Warn("supersede previous version", "proposal", prev.ID, "err", err)
			}
		}
	}
	return p, nil
}

// sweep expires proposals whose time is up, every SweepInterval.
func (e *Engine) sweep(ctx context.Context) {
	t := time.NewTicker(e.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids, err := e.deps.Proposals.DueExpiries(ctx, e.deps.Now(), 100)
		if err != nil {
			e.logger.Warn("find expired proposals", "err", err)
			continue
		}
		for _, id := range ids {
			e.expire(ctx, id)
		}
	}
}

func (e *Engine) expire(ctx context.Context, id ProposalID) {
	ok, err := e.deps.Proposals.Claim(ctx, id, "expire", claimTTL)
	if err != nil || !ok {
		if err == nil {
			// Decided (or being decided): not ours to expire.
			_ = e.deps.Proposals.RemoveExpiry(ctx, id)
		}
		return
	}
	p, err := e.deps.Proposals.Proposal(ctx, id)
	if err != nil || p.State != ProposalPending {
		_ = e.deps.Proposals.RemoveExpiry(ctx, id)
		return
	}
	if _, err := e.finish(ctx, p, ProposalExpired, "", "expired"); err != nil {
		e.logger.Warn("expire proposal", "proposal", id, "err", err)
		return
	}
	_ = e.deps.Proposals.RemoveExpiry(ctx, id)
}

// describe is an error as a sentence for a chat reply.
func describe(err error) string {
	var de *DecidedError
	switch {
	case errors.As(err, &de):
		return "it was already " + string(de.State) + "."
	case errors.Is(err, ErrExpired):
		return "it expired."
	case errors.Is(err, ErrForbidden):
		return "only the requester or an admin may do that."
	case errors.Is(err, ErrNotFound):
		return "it does not exist."
	case errors.Is(err, ErrUnavailable):
		return "a database is unavailable; try again in a minute."
	}
	return err.Error()
}
