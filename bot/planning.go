package bot

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
)

// answer plans a request's answer, whose reply names the request (a
// surface turns the request's draft into it). A request whose proposal
// was already stored (planned before a crash) is not planned again; a
// fresh one (no worker took it before) has none to look for. The
// request's taking is recorded while the model is asked (tk.start);
// anything audited after the model waits for it (tk.wait).
// made is the proposal as this call stored it, when it stored one: the
// post that follows shows it without reading it back.
func (e *Engine) answer(ctx context.Context, r board.Request, fresh bool, tk *taking) (ans board.Answer, made *board.Proposal) {
	ans, made = e.answerOf(ctx, r, fresh, tk)
	if ans.Reply != nil {
		ans.Reply.Request = r.ID
	}
	return ans, made
}

func (e *Engine) answerOf(ctx context.Context, r board.Request, fresh bool, tk *taking) (board.Answer, *board.Proposal) {
	if !fresh {
		if p, err := e.deps.Proposals.Proposal(ctx, board.ProposalIDFor(r.ID)); err == nil {
			return board.Answer{ProposalID: p.ID, Reply: &board.Reply{Kind: board.ReplyProposal, Text: p.Plan.Answer}}, nil
		}
	}
	reply, proposal, failure := e.plan(ctx, r, tk)
	if proposal != nil {
		ans := board.Answer{ProposalID: proposal.ID, Reply: &board.Reply{Kind: board.ReplyProposal, Text: proposal.Plan.Answer}}
		if proposal.Reposting {
			return ans, nil // adopted from another worker: not this call's to post as it stands
		}
		return ans, proposal
	}
	return board.Answer{Reply: reply, Failure: failure}, nil
}

// Failures that come from a database being away for a moment: the request
// is tried again later rather than answered with the failure, until its
// last delivery.
const (
	failBoardsUnavailable = "the board database is unavailable"
	failNotStored         = "could not store the proposal"
)

// transient reports whether ans failed only because a database was away.
func transient(ans board.Answer) bool {
	return ans.Failure == failBoardsUnavailable || ans.Failure == failNotStored
}

// storingAtOnce is how many answered plans are stored at once: twice the
// cores, so one plan's round trips to Postgres and Redis overlap
// another's work, and at least 4.
func storingAtOnce() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

func threadKey(t board.Thread) string { return t.Channel.Key() + ":" + t.ID }

func (e *Engine) remember(ctx context.Context, r board.Request, role, text string) {
	if err := e.deps.Requests.AppendTurn(ctx, threadKey(r.Thread), plan.Turn{Role: role, User: r.User, Text: text}); err != nil {
		e.logger.Warn("remember thread turn", "request", r.ID, "err", err)
	}
}

// plan turns a request into a reply or a proposal; failure is set when the
// request failed (its reply says why, kindly).
func (e *Engine) plan(ctx context.Context, r board.Request, tk *taking) (reply *board.Reply, proposal *board.Proposal, failure string) {
	ch := r.Thread.Channel.Key()
	var prev *board.Proposal
	if id := r.Revises; id != "" {
		p, err := e.pendingForDecision(ctx, id, r.User, "revise")
		if err != nil {
			return &board.Reply{Kind: board.ReplyError, Text: "I can't revise that proposal. " + Explain(err)}, nil, "cannot revise: " + Explain(err)
		}
		prev = &p
	}
	if id := r.Again; id != "" {
		tk.wait()
		return e.proposeAgain(ctx, r, id)
	}

	// What the model is shown, the budget and the channel's policy are
	// read at once, each a round trip of its own. The policy read serves
	// the budget (a revision's too) and then the proposal: a proposal
	// takes the policy in force when its request was planned.
	pol := e.readPolicy(ctx, r.Thread.Channel)
	defer pol.wait()
	var (
		reads     sync.WaitGroup
		budget    *board.Reply
		boardErr  error
		in        = planner.PromptInput{Profiles: e.cfg.Profiles, Message: r.Text}
		hasBoard  bool
		target    board.ID
		turns     []plan.Turn
		turnsRead bool
	)
	reads.Go(func() { budget = e.overBudget(ctx, r, pol) })
	reads.Go(func() {
		b, err := e.deps.Boards.ChannelBoard(ctx, ch)
		if err != nil {
			if !errors.Is(err, board.ErrNotFound) {
				boardErr = err
			}
			return
		}
		if sum, err := e.deps.Boards.BoardSummary(ctx, b.ID); err == nil {
			in.Board, hasBoard, target = &sum, true, b.ID
		}
	})
	reads.Go(func() {
		var err error
		turns, err = e.deps.Requests.Turns(ctx, threadKey(r.Thread))
		turnsRead = err == nil
	})
	reads.Wait()
	if boardErr != nil {
		e.logger.Warn("read the channel's board", "request", r.ID, "err", boardErr)
		return &board.Reply{Kind: board.ReplyError, Text: "I can't reach the board database right now, so I can't plan. Please try again in a minute."}, nil, failBoardsUnavailable
	}
	if turnsRead {
		in.History = turns
	}
	in.History = append(in.History, r.Quoted...)
	if prev != nil {
		in.PreviousPlan, in.Feedback, in.Message = &prev.Plan, r.Feedback, prev.Request
	}
	// The person's turn is kept for the next request's prompt while this
	// one is planned; it is written before this one's answer is.
	remembered := make(chan struct{})
	go func() {
		defer close(remembered)
		e.remember(ctx, r, "user", r.Text)
	}()
	defer func() { <-remembered }()

	if budget != nil {
		return budget, nil, ErrOverBudget.Error()
	}
	opts := plan.Options{Profiles: planner.ProfileNames(e.cfg.Profiles), HasTargetBoard: hasBoard}
	if in.Board != nil {
		opts.Board = in.Board.State
	}
	// The model is asked as soon as what it is shown is read; the
	// request's taking is written meanwhile, and before anything the
	// answer records.
	tk.start()
	drafts := e.startDrafting(r)
	in.OnDraft = drafts.onDraft()
	out, err := e.deps.Planner.Plan(ctx, in, opts)
	drafts.stop()
	tk.wait()
	// The charge is a write of its own: it goes on beside the proposal's
	// (the next request's budget check reads it, not this one), and the
	// plan is answered once it is done.
	charged := make(chan struct{})
	go func() {
		defer close(charged)
		e.chargeTokens(ctx, r, out)
	}()
	defer func() { <-charged }()
	// Plans whose models answer together are stored a few at a time, in
	// the order they answered: each preview waits for its own work and
	// that of the few before it, not for a share of every other one's.
	select {
	case e.storing <- struct{}{}:
		defer func() { <-e.storing }()
	case <-ctx.Done():
		return nil, nil, "" // shutting down mid-plan: left for a reclaim
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ""
		}
		return e.planFailure(ctx, r, err)
	}
	env := out.Result.Plan
	switch env.Kind {
	case plan.KindAnswer, plan.KindRefuse:
		return &board.Reply{Kind: board.ReplyKind(env.Kind), Text: env.Answer}, nil, ""
	case plan.KindClarify:
		return &board.Reply{Kind: board.ReplyClarify, Text: env.Answer, Questions: env.ClarifyingQuestions}, nil, ""
	}
	reply, p, err := e.propose(ctx, r, r.User, *env, out.Result.Warnings, prev, target, pol)
	if err != nil {
		e.logger.Warn("store proposal", "request", r.ID, "err", err)
		return &board.Reply{Kind: board.ReplyError, Text: "I drafted a plan but couldn't store it. " + Explain(err)}, nil, failNotStored
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
		kept := plan.Cut(s, maxAuditRaw, "")
		out[i] = kept + fmt.Sprintf("\n[truncated: %d of %d bytes kept]", len(kept), len(s))
	}
	return out
}

// planFailure turns a planner error into a friendly reply, keeping the raw
// output of an invalid plan in the audit log for debugging.
func (e *Engine) planFailure(ctx context.Context, r board.Request, err error) (*board.Reply, *board.Proposal, string) {
	var inv *planner.InvalidOutputError
	switch {
	case errors.As(err, &inv):
		firstIssue := "the output was not a plan"
		if len(inv.Errors) > 0 {
			firstIssue = strings.TrimPrefix(inv.Errors[0].Path+": ", ": ") + inv.Errors[0].Message
		}
		e.audit(ctx, board.AuditEvent{Actor: r.User, Action: "plan_failed", Channel: r.Thread.Channel.Key()},
			map[string]any{"request_id": r.ID, "raw": auditRaw(inv.Raw), "errors": inv.Errors})
		return &board.Reply{Kind: board.ReplyError, Text: "I couldn't turn that into a valid plan (" + firstIssue + "). Nothing was changed; try rephrasing the request."}, nil, err.Error()
	case errors.Is(err, planner.ErrTimeout):
		e.logger.Warn("model timed out", "request", r.ID, "err", err)
		return &board.Reply{Kind: board.ReplyError, Text: "The model took too long to answer, so nothing was planned. Please try again; a smaller request may help."}, nil, "the model took too long"
	default:
		// The detail (its address, the dial error) is for the operator's
		// log; the thread gets what to do.
		e.logger.Error("model server unreachable", "request", r.ID, "err", err)
		return &board.Reply{Kind: board.ReplyError, Text: "I can't reach the model server, so I can't plan right now. Whoever runs BobNet should check that the model server is running and that OPENAI_BASE_URL points at it."}, nil, "the model server is unreachable"
	}
}
