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

// Run consumes the request queue with the configured workers, renews the
// leases of the requests it works on, reclaims requests of dead workers
// and expires proposals, until ctx is done. Then it lets the messages
// being posted finish, sends those still queued (for up to FlushTimeout)
// and returns; requests not yet answered stay on the stream for another
// replica or the next start.
func (e *Engine) Run(ctx context.Context) error {
	defer e.out.close()
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
	wg.Add(2)
	go func() {
		defer wg.Done()
		e.sweep(ctx)
	}()
	go func() {
		defer wg.Done()
		e.renewLeases(ctx)
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
			e.leases.hold(consumer, d.MessageID)
			e.handle(ctx, consumer, d)
		}
	}
}

// handle takes one request: records it as taken (once), plans its answer
// (once: the answer is kept until posted) and hands the answer to the
// request's channel to post. The stream entry is acknowledged only once the
// answer is posted, so a crash anywhere before leaves the request to be
// reclaimed and finished, never lost and never planned twice.
func (e *Engine) handle(ctx context.Context, consumer string, d Delivery) {
	id := d.RequestID
	rec, err := e.deps.Requests.Request(ctx, id)
	if errors.Is(err, ErrNotFound) {
		e.logger.Warn("queued request has no record; dropping it", "request", id)
		e.ack(ctx, consumer, d)
		return
	}
	if err != nil {
		e.logger.Warn("load request", "request", id, "err", err)
		e.leases.drop(consumer, d.MessageID) // reclaimed once Redis answers again
		return
	}
	if rec.Status.State == RequestDone || rec.Status.State == RequestFailed {
		e.ack(ctx, consumer, d) // answered before its worker died; only the ack was lost
		return
	}
	r := rec.Request
	if !rec.Taken && r.Webhook != nil {
		if closed := e.takeDelivery(ctx, consumer, d, rec); closed {
			return
		}
	}
	if !rec.Taken {
		// The first thing recorded about a request, so the audit reads in
		// the order things happened; its key keeps it to one row.
		detail := map[string]any{"request_id": id, "source": r.Thread.Channel.Source, "revises": r.Revises, "again": r.Again}
		if r.Via != "" {
			detail["via"] = r.Via // the worker's context does not carry it
		}
		e.audit(ctx, board.AuditEvent{Actor: r.User, Action: "requested", Channel: r.Thread.Channel.Key(), DedupeKey: "requested:" + string(id)}, detail)
		rec.Taken, rec.Status.State = true, RequestPlanning
		if err := e.deps.Requests.PutRequest(ctx, rec); err != nil {
			e.logger.Warn("store request status", "request", id, "err", err)
		}
	}
	if rec.Answer == nil {
		ans := e.answer(ctx, r)
		if ctx.Err() != nil {
			e.leases.drop(consumer, d.MessageID) // shutting down mid-plan: left for a reclaim
			return
		}
		rec.Answer = &ans
		if err := e.deps.Requests.PutRequest(ctx, rec); err != nil {
			e.logger.Warn("store planned answer", "request", id, "err", err)
		}
	}
	if err := e.out.send(r.Thread.Channel.Key(), func(pctx context.Context) { e.post(pctx, consumer, d, rec) }); err != nil {
		e.logger.Warn("answer not posted yet: "+err.Error()+"; it will be retried", "request", id)
		e.leases.drop(consumer, d.MessageID)
	}
}

// takeDelivery records the webhook delivery a request came from before
// anything else is written about it. The ack path only dedupes in Redis
// (for as long as the request's record lives there); Postgres keeps the
// delivery for good, so a redelivery that outlived its Redis key, or that
// Redis lost, is closed here as a duplicate instead of planned again. It
// reports whether the request is finished with (closed, or left for a
// retry because Postgres did not answer).
func (e *Engine) takeDelivery(ctx context.Context, consumer string, d Delivery, rec RequestRecord) bool {
	w := rec.Request.Webhook
	res, err := e.deps.Boards.RecordDelivery(ctx, board.Delivery{Hook: w.Hook, ID: w.ID, RequestID: rec.Request.ID})
	if err != nil {
		e.logger.Warn("record webhook delivery; the request is retried", "request", rec.Request.ID, "hook", w.Hook, "delivery", w.ID, "err", err)
		e.leases.drop(consumer, d.MessageID) // reclaimed once Postgres answers again
		return true
	}
	if res.RequestID == rec.Request.ID {
		return false // this request's own delivery (new, or recorded before a crash)
	}
	e.logger.Info("webhook redelivery closed as a duplicate", "request", rec.Request.ID, "hook", w.Hook, "delivery", w.ID, "first", res.RequestID)
	rec.Taken = true
	rec.Status.State, rec.Status.DuplicateOf = RequestDone, res.RequestID
	if err := e.deps.Requests.PutRequest(ctx, rec); err != nil {
		e.logger.Warn("store request status", "request", rec.Request.ID, "err", err)
		e.leases.drop(consumer, d.MessageID)
		return true
	}
	e.ack(ctx, consumer, d)
	return true
}

// postAttempts is how many times an answer is tried before the request is
// closed as failed to post.
const postAttempts = 3

// post posts a planned answer, then marks the request done and
// acknowledges it: posting is part of answering.
func (e *Engine) post(ctx context.Context, consumer string, d Delivery, rec RequestRecord) {
	r, ans := rec.Request, rec.Answer
	poster := e.poster(r.Thread.Channel.Source)
	var err error
	for attempt := range postAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		if err = e.postOnce(ctx, poster, r, ans); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil && e.out.stopping() {
		e.logger.Info("answer not posted before shutdown; leaving it for another replica", "request", r.ID, "err", err)
		e.leases.drop(consumer, d.MessageID)
		return
	}
	rec.Status.State = RequestDone
	switch {
	case ans.ProposalID != "":
		rec.Status.ProposalID = ans.ProposalID
		rec.Status.Reply = ans.Reply
	case ans.Reply != nil:
		rec.Status.Reply = ans.Reply
	}
	if ans.Failure != "" {
		rec.Status.State, rec.Status.Error = RequestFailed, ans.Failure
	}
	if err != nil {
		e.logger.Warn("post answer", "request", r.ID, "err", err)
		rec.Status.Error = strings.TrimSpace(rec.Status.Error + " (the answer could not be posted to " + string(r.Thread.Channel.Source) + ")")
	}
	e.observeAnswer(r, rec.Status)
	if err := e.deps.Requests.PutRequest(ctx, rec); err != nil {
		e.logger.Warn("store request status", "request", r.ID, "err", err)
		e.leases.drop(consumer, d.MessageID) // not acked: posted again after a reclaim
		return
	}
	if ans.ProposalID != "" {
		e.logger.Debug("request answered", "request", r.ID, "state", rec.Status.State, "proposal", ans.ProposalID)
	} else {
		e.logger.Debug("request answered", "request", r.ID, "state", rec.Status.State)
	}
	e.ack(ctx, consumer, d)
}

// postOnce posts an answer's preview or reply.
func (e *Engine) postOnce(ctx context.Context, poster Poster, r Request, ans *Answer) error {
	if ans.ProposalID == "" {
		if ans.Reply == nil {
			return nil
		}
		if err := poster.Reply(ctx, r.Thread, *ans.Reply); err != nil {
			return err
		}
		e.remember(ctx, r, "assistant", ans.Reply.Text)
		return nil
	}
	p, err := e.deps.Proposals.Proposal(ctx, ans.ProposalID)
	if err != nil {
		return err
	}
	if p.Message != "" {
		return nil // posted before a crash
	}
	ref, err := poster.PostPreview(ctx, p)
	if err != nil {
		return err
	}
	if ref != "" {
		e.previewPosted(ctx, poster, p, ref)
	}
	e.remember(ctx, r, "assistant", fmt.Sprintf("(proposed %s v%d with %d cards)", p.ID, p.Version, p.Plan.Stats().Cards))
	return nil
}

// previewPosted records where p's preview went, and redraws it if a
// decision (or an approval of several) came in while it was being posted
// and found no message to redraw. The store tells which side redraws, so
// exactly one does.
func (e *Engine) previewPosted(ctx context.Context, poster Poster, p Proposal, ref MessageRef) {
	missed, err := e.deps.Proposals.SetPreviewMessage(ctx, p.ID, ref, p.ExpiresAt)
	if err != nil {
		e.logger.Warn("store preview ref", "proposal", p.ID, "err", err)
		return
	}
	e.logger.Debug("preview posted", "proposal", p.ID, "message", ref)
	if !missed {
		return
	}
	now, err := e.deps.Proposals.Proposal(ctx, p.ID)
	if err != nil {
		e.logger.Warn("reread proposal after its preview", "proposal", p.ID, "err", err)
		return
	}
	now = e.committed(ctx, now)
	now.Message = ref
	if err := poster.UpdatePreview(ctx, e.withApprovals(ctx, now)); err != nil {
		e.logger.Warn("update preview decided while posted", "proposal", p.ID, "err", err)
	}
}

// updatePreview redraws p's preview. A decision taken while the preview
// was still being posted has no message yet: it is read again here, when
// the redraw runs, and when there is still none previewPosted redraws.
func (e *Engine) updatePreview(ctx context.Context, poster Poster, p Proposal) error {
	if p.Message == "" {
		ref, err := e.deps.Proposals.PreviewMessage(ctx, p.ID, p.ExpiresAt)
		if err != nil {
			return err
		}
		if ref == "" {
			return nil
		}
		p.Message = ref
	}
	return poster.UpdatePreview(ctx, p)
}

func (e *Engine) ack(ctx context.Context, consumer string, d Delivery) {
	if err := e.deps.Queue.Ack(ctx, d.MessageID); err != nil {
		e.logger.Warn("ack request", "request", d.RequestID, "err", err)
	}
	e.leases.drop(consumer, d.MessageID)
}

// answer plans a request's answer. A request whose proposal was already
// stored (planned before a crash) is not planned again.
func (e *Engine) answer(ctx context.Context, r Request) Answer {
	pid := proposalIDFor(r.ID)
	if p, err := e.deps.Proposals.Proposal(ctx, pid); err == nil {
		return Answer{ProposalID: p.ID, Reply: &Reply{Kind: ReplyProposal, Text: p.Plan.Answer}}
	}
	reply, proposal, failure := e.plan(ctx, r)
	if proposal != nil {
		return Answer{ProposalID: proposal.ID, Reply: &Reply{Kind: ReplyProposal, Text: proposal.Plan.Answer}}
	}
	return Answer{Reply: reply, Failure: failure}
}

func threadKey(t Thread) string { return t.Channel.Key() + ":" + t.ID }

func (e *Engine) remember(ctx context.Context, r Request, role, text string) {
	if err := e.deps.Requests.AppendTurn(ctx, threadKey(r.Thread), planner.Turn{Role: role, User: r.User, Text: text}); err != nil {
		e.logger.Warn("remember thread turn", "request", r.ID, "err", err)
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
			return &Reply{Kind: ReplyError, Text: "I can't revise that proposal: " + describe(err)}, nil, "cannot revise: " + describe(err)
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
		e.logger.Warn("read the channel's board", "request", r.ID, "err", err)
		return &Reply{Kind: ReplyError, Text: "I can't reach the board database right now, so I can't plan. Please try again in a minute."}, nil, "the board database is unavailable"
	}
	if turns, err := e.deps.Requests.Turns(ctx, threadKey(r.Thread)); err == nil {
		in.History = turns
	}
	if prev != nil {
		in.PreviousPlan, in.Feedback, in.Message = &prev.Plan, r.Feedback, prev.Request
	}
	e.remember(ctx, r, "user", r.Text)

	if reply := e.overBudget(ctx, r); reply != nil {
		return reply, nil, ErrOverBudget.Error()
	}
	opts := planner.Options{Profiles: planner.ProfileNames(e.cfg.Profiles), HasTargetBoard: hasBoard}
	if in.Board != nil {
		opts.Board = in.Board.State
	}
	out, err := e.deps.Planner.Plan(ctx, in, opts)
	e.chargeTokens(ctx, r, out)
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
	reply, p, err := e.propose(ctx, r, *env, out.Result.Warnings, prev, target)
	if err != nil {
		e.logger.Warn("store proposal", "request", r.ID, "err", err)
		return &Reply{Kind: ReplyError, Text: "I drafted a plan but couldn't store it: " + describe(err) + " Nothing was changed; please try again."}, nil, "could not store the proposal"
	}
	return reply, p, ""
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
		e.logger.Warn("model timed out", "request", r.ID, "err", err)
		return &Reply{Kind: ReplyError, Text: "The model took too long to answer, so nothing was planned. Please try again; a smaller request may help."}, nil, "the model took too long"
	default:
		// The detail (its address, the dial error) is for the operator's
		// log; the thread gets what to do.
		e.logger.Error("model server unreachable", "request", r.ID, "err", err)
		return &Reply{Kind: ReplyError, Text: "I can't reach the model server, so I can't plan right now. Whoever runs BobNet should check that the model server is running and that OPENAI_BASE_URL points at it."}, nil, "the model server is unreachable"
	}
}

// proposeAgain re-offers an expired proposal's plan without asking the
// model, after validating it against the channel's board as it is now.
func (e *Engine) proposeAgain(ctx context.Context, r Request, id ProposalID) (*Reply, *Proposal, string) {
	old, err := e.Proposal(ctx, id)
	if err != nil {
		return &Reply{Kind: ReplyError, Text: "I can't find that proposal any more: " + describe(err)}, nil, "cannot propose again: " + describe(err)
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
	_, p, err := e.propose(ctx, r, *res.Plan, res.Warnings, nil, target)
	if err != nil {
		e.logger.Warn("store proposal", "request", r.ID, "err", err)
		return &Reply{Kind: ReplyError, Text: "I couldn't store the proposal: " + describe(err)}, nil, "could not store the proposal"
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
func (e *Engine) propose(ctx context.Context, r Request, plan planner.Envelope, warnings []planner.Issue, prev *Proposal, target board.ID) (*Reply, *Proposal, error) {
	now := e.deps.Now()
	p := Proposal{
		ID: proposalIDFor(r.ID), Version: 1, RequestID: r.ID, Thread: r.Thread, RequestedBy: r.User, Request: r.Text,
		Plan: plan, Warnings: warnings, State: ProposalPending, CreatedAt: now, ExpiresAt: now.Add(e.cfg.ProposalTTL), TargetBoard: target,
	}
	if p.Warnings == nil {
		p.Warnings = []planner.Issue{}
	}
	p.BoardChanges = e.boardChanges(ctx, plan, target)
	if prev != nil {
		ok, err := e.deps.Proposals.Claim(ctx, prev.ID, "supersede:"+string(p.ID), e.cfg.ClaimTTL)
		if err != nil {
			return nil, nil, unavailable("claim previous version", err)
		}
		cur, cerr := e.Proposal(ctx, prev.ID)
		if !ok || cerr != nil || cur.State != ProposalPending {
			if ok {
				e.release(ctx, prev.ID)
			}
			why := fmt.Sprintf("v%d was decided while I was revising it", prev.Version)
			if cerr == nil && cur.State != ProposalPending {
				why = fmt.Sprintf("v%d was %s", prev.Version, cur.State)
				if cur.DecidedBy != "" {
					why += " by " + cur.DecidedBy
				}
				why += " while I was revising it"
			}
			e.audit(ctx, board.AuditEvent{Actor: r.User, Action: "revision_dropped", Channel: r.Thread.Channel.Key(), ProposalID: prev.ID},
				map[string]any{"request_id": r.ID, "version": prev.Version})
			return &Reply{Kind: ReplyInfo, Text: "I dropped this revision: " + why + ", so nothing new needs deciding."}, nil, nil
		}
		p.Version, p.Supersedes, p.Request, p.RequestedBy = prev.Version+1, prev.ID, prev.Request, prev.RequestedBy
		p.Chain = prev.ChainID()
		p.Changes = Diff(prev.Plan, plan)
	}
	planJSON, _ := json.Marshal(plan)
	q, err := e.quorumFor(ctx, r.Thread.Channel, plan.Stats().Cards, prev)
	if err != nil {
		if prev != nil {
			e.release(ctx, prev.ID)
		}
		return nil, nil, err
	}
	p.Quorum = q
	policyJSON, _ := json.Marshal(q)
	if q == nil {
		policyJSON = nil
	}
	if err := e.deps.Boards.SaveProposal(ctx, board.ProposalRecord{
		ID: p.ID, Chain: p.ChainID(), Channel: r.Thread.Channel.Key(), Version: p.Version, Supersedes: p.Supersedes,
		RequestedBy: p.RequestedBy, State: string(ProposalPending), Plan: planJSON, CreatedAt: now, ExpiresAt: p.ExpiresAt, Policy: policyJSON,
	}); err != nil {
		if prev != nil {
			e.release(ctx, prev.ID)
		}
		return nil, nil, unavailable("save proposal", err)
	}
	if err := e.deps.Proposals.PutProposal(ctx, p); err != nil {
		if prev != nil {
			e.release(ctx, prev.ID)
		}
		return nil, nil, err
	}
	st := plan.Stats()
	e.audit(ctx, board.AuditEvent{Actor: r.User, Action: "proposed", Channel: r.Thread.Channel.Key(), ProposalID: p.ID, DedupeKey: "proposed:" + string(p.ID)},
		map[string]any{"request_id": r.ID, "version": p.Version, "supersedes": p.Supersedes, "cards": st.Cards, "links": st.Links})
	e.emit(ctx, p, false)
	if prev != nil {
		if cur, err := e.Proposal(ctx, prev.ID); err == nil && cur.State == ProposalPending {
			if _, err := e.finish(ctx, cur, ProposalSuperseded, r.User, "superseded"); err != nil {
				e.logger.Warn("supersede previous version", "proposal", prev.ID, "err", err)
			}
		}
	}
	return nil, &p, nil
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
	ok, err := e.deps.Proposals.Claim(ctx, id, "expire", e.cfg.ClaimTTL)
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
	return "something went wrong on my side; nothing was changed."
}
