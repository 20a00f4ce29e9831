package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
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
	if d.Count > MaxDeliveries {
		e.giveUp(ctx, consumer, d, rec)
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
		if transient(ans) && d.Count < MaxDeliveries {
			// Postgres or Redis is away for a moment: try again after a
			// reclaim instead of answering "try again" and then, when the
			// person does, answering twice.
			e.logger.Warn("request not answered yet: "+ans.Failure+"; it will be tried again", "request", id, "delivery", d.Count)
			e.leases.drop(consumer, d.MessageID)
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

func (e *Engine) ack(ctx context.Context, consumer string, d Delivery) {
	if err := e.deps.Queue.Ack(ctx, d.MessageID); err != nil {
		e.logger.Warn("ack request", "request", d.RequestID, "err", err)
	}
	e.leases.drop(consumer, d.MessageID)
}

// answer plans a request's answer. A request whose proposal was already
// stored (planned before a crash) is not planned again.
func (e *Engine) answer(ctx context.Context, r Request) Answer {
	pid := board.ProposalIDFor(r.ID)
	if p, err := e.deps.Proposals.Proposal(ctx, pid); err == nil {
		return Answer{ProposalID: p.ID, Reply: &Reply{Kind: ReplyProposal, Text: p.Plan.Answer}}
	}
	reply, proposal, failure := e.plan(ctx, r)
	if proposal != nil {
		return Answer{ProposalID: proposal.ID, Reply: &Reply{Kind: ReplyProposal, Text: proposal.Plan.Answer}}
	}
	return Answer{Reply: reply, Failure: failure}
}

// Failures that come from a database being away for a moment: the request
// is tried again later rather than answered with the failure, until its
// last delivery.
const (
	failBoardsUnavailable = "the board database is unavailable"
	failNotStored         = "could not store the proposal"
)

// transient reports whether ans failed only because a database was away.
func transient(ans Answer) bool {
	return ans.Failure == failBoardsUnavailable || ans.Failure == failNotStored
}

func threadKey(t Thread) string { return t.Channel.Key() + ":" + t.ID }

func (e *Engine) remember(ctx context.Context, r Request, role, text string) {
	if err := e.deps.Requests.AppendTurn(ctx, threadKey(r.Thread), plan.Turn{Role: role, User: r.User, Text: text}); err != nil {
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
		return &Reply{Kind: ReplyError, Text: "I can't reach the board database right now, so I can't plan. Please try again in a minute."}, nil, failBoardsUnavailable
	}
	if turns, err := e.deps.Requests.Turns(ctx, threadKey(r.Thread)); err == nil {
		in.History = turns
	}
	in.History = append(in.History, r.Quoted...)
	if prev != nil {
		in.PreviousPlan, in.Feedback, in.Message = &prev.Plan, r.Feedback, prev.Request
	}
	e.remember(ctx, r, "user", r.Text)

	if reply := e.overBudget(ctx, r); reply != nil {
		return reply, nil, ErrOverBudget.Error()
	}
	opts := plan.Options{Profiles: planner.ProfileNames(e.cfg.Profiles), HasTargetBoard: hasBoard}
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
	case plan.KindAnswer, plan.KindRefuse:
		return &Reply{Kind: ReplyKind(env.Kind), Text: env.Answer}, nil, ""
	case plan.KindClarify:
		return &Reply{Kind: ReplyClarify, Text: env.Answer, Questions: env.ClarifyingQuestions}, nil, ""
	}
	reply, p, err := e.propose(ctx, r, r.User, *env, out.Result.Warnings, prev, target)
	if err != nil {
		e.logger.Warn("store proposal", "request", r.ID, "err", err)
		return &Reply{Kind: ReplyError, Text: "I drafted a plan but couldn't store it: " + describe(err) + " Nothing was changed; please try again."}, nil, failNotStored
	}
	return reply, p, ""
}

// maxAuditRaw is how much of each raw model output an audit row keeps:
// enough to see what went wrong, not megabytes of a model that ran on.
const maxAuditRaw = 64 << 10

// auditRaw is raw, each output cut to maxAuditRaw bytes (on a character
// boundary) with a marker saying how long it was.
func auditRaw(raw []string) []string {
	out := make([]string, len(raw))
	for i, s := range raw {
		if len(s) <= maxAuditRaw {
			out[i] = s
			continue
		}
		cut := maxAuditRaw
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		out[i] = s[:cut] + fmt.Sprintf("\n[truncated: %d of %d bytes kept]", cut, len(s))
	}
	return out
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
			map[string]any{"request_id": r.ID, "raw": auditRaw(inv.Raw), "errors": inv.Errors})
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

// sweep expires proposals whose time is up, and sends the reminders that
// are due, every SweepInterval.
func (e *Engine) sweep(ctx context.Context) {
	t := time.NewTicker(e.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.remindDue(ctx) // remind.go
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
	held, err := e.claim(ctx, id, "expire", "")
	if err != nil || held == nil {
		if err == nil {
			// Decided (or being decided): not ours to expire.
			_ = e.deps.Proposals.RemoveExpiry(ctx, id)
		}
		return
	}
	defer held.end()
	p, err := e.deps.Proposals.Proposal(ctx, id)
	if err != nil || p.State != ProposalPending {
		_ = e.deps.Proposals.RemoveExpiry(ctx, id)
		return
	}
	if _, err := e.finish(ctx, held, p, ProposalExpired, "", "expired"); err != nil {
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
