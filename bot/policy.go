package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
)

// PolicyStore is what the board store also offers when approval policies
// are on: the policy of a channel and the approvals given so far.
// *store.Store is one; an engine whose Boards is not one keeps the single
// global rule (requester, admins, any member).
type PolicyStore interface {
	PolicyFor(ctx context.Context, channel string) (board.PolicyInForce, error)
	AddApproval(ctx context.Context, c board.ApprovalChange) ([]string, error)
	WithdrawApproval(ctx context.Context, c board.ApprovalChange) ([]string, error)
	Approvals(ctx context.Context, proposalID ProposalID) ([]string, error)
}

// PowerLevels tells a Matrix room member's power level, for
// "matrix_power:N" deciders. The Matrix adapter's poster implements it
// (from the room's m.room.power_levels state: users[user], else
// users_default); the engine finds it on the poster registered for
// SourceMatrix. Without it, "matrix_power:N" lets nobody decide.
type PowerLevels interface {
	PowerLevel(ctx context.Context, room, user string) (int, error)
}

// SlackGroups tells whether a Slack user is in a user group, for
// "slack_group:S…" deciders; the Slack adapter's poster may implement it
// (usergroups.users.list). Without it, "slack_group:" lets nobody decide.
type SlackGroups interface {
	InGroup(ctx context.Context, group, user string) (bool, error)
}

// BuiltinPolicyKey names the policy made from the engine's Config when no
// policy is stored for a channel, its source or the default.
const BuiltinPolicyKey = "built-in"

// MatrixModeratorLevel is the power level Matrix calls moderator; by
// default the moderators of a Matrix room decide its proposals.
const MatrixModeratorLevel = 50

// ErrNothingToWithdraw means the user has no approval of the proposal to
// withdraw.
var ErrNothingToWithdraw = errors.New("no approval to withdraw")

// Quorum is the approval policy a proposal was made under, how many
// approvals it needs and who has approved so far. A later change of the
// channel's policy does not change it.
type Quorum struct {
	// Key is where the policy came from: the channel, "<source>:*",
	// "default" or "built-in".
	Key       string       `json:"key"`
	Policy    board.Policy `json:"policy"`
	Needed    int          `json:"needed"`
	Approvals []string     `json:"approvals"`
}

// Multi reports whether the proposal needs more than one approval; nil
// needs one.
func (q *Quorum) Multi() bool { return q != nil && q.Needed > 1 }

// PolicyError is a refusal by the policy, naming the rule; it matches
// ErrForbidden.
type PolicyError struct {
	Rule string
}

func (e *PolicyError) Error() string { return "not allowed: " + e.Rule }

// Is makes errors.Is(err, ErrForbidden) true.
func (e *PolicyError) Is(target error) bool { return target == ErrForbidden }

func (e *Engine) policyStore() PolicyStore {
	ps, _ := e.deps.Boards.(PolicyStore)
	return ps
}

// BuiltinPolicy is the policy of a channel of src when none is stored:
// the requester and the admins decide (any member with
// AnyMemberMayDecide), and in Matrix the room's moderators too.
func (e *Engine) BuiltinPolicy(src Source) board.Policy {
	d := []string{board.DeciderRequester, board.DeciderAdmins}
	if e.cfg.AnyMemberMayDecide {
		d = append(d, board.DeciderAnyMember)
	}
	if src == SourceMatrix {
		d = append(d, board.DeciderMatrixPower+strconv.Itoa(MatrixModeratorLevel))
	}
	return board.Policy{Deciders: d, Approvals: 1, SelfApproval: true}
}

// PolicyFor returns the policy in force in ch now.
func (e *Engine) PolicyFor(ctx context.Context, ch Channel) (board.PolicyInForce, error) {
	ps := e.policyStore()
	if ps == nil {
		return board.PolicyInForce{Key: BuiltinPolicyKey, Policy: e.BuiltinPolicy(ch.Source)}, nil
	}
	in, err := ps.PolicyFor(ctx, ch.Key())
	if errors.Is(err, board.ErrNotFound) {
		return board.PolicyInForce{Key: BuiltinPolicyKey, Policy: e.BuiltinPolicy(ch.Source)}, nil
	}
	if err != nil {
		return board.PolicyInForce{}, unavailable("read policy", err)
	}
	return in, nil
}

// quorumFor is the quorum of a new proposal in ch: a revision keeps the
// policy its request was made under, with no approvals (the plan
// changed); anything else takes the channel's policy now. Nil when the
// store keeps no policies.
func (e *Engine) quorumFor(ctx context.Context, ch Channel, cards int, prev *Proposal) (*Quorum, error) {
	if e.policyStore() == nil {
		return nil, nil
	}
	var in board.PolicyInForce
	if prev != nil && prev.Quorum != nil {
		in = board.PolicyInForce{Key: prev.Quorum.Key, Policy: prev.Quorum.Policy}
	} else {
		var err error
		if in, err = e.PolicyFor(ctx, ch); err != nil {
			return nil, err
		}
	}
	return &Quorum{Key: in.Key, Policy: in.Policy, Needed: in.Policy.Needed(cards), Approvals: []string{}}, nil
}

// mayAct checks that user may take action on p under the policy it was
// proposed under (or the global rule for a proposal without one).
func (e *Engine) mayAct(ctx context.Context, p Proposal, user, action string) error {
	if p.Quorum == nil {
		if !e.mayDecide(p, user) {
			return fmt.Errorf("%s proposal %s: %w: only the requester or an admin may", action, p.ID, ErrForbidden)
		}
		return nil
	}
	pol := p.Quorum.Policy
	if !e.ext.decides(p.Thread.Channel.Key(), user) && !e.policyAllows(ctx, p, user) {
		if p.Quorum.Key == BuiltinPolicyKey {
			// No policy was set: the refusal reads as it always has.
			return fmt.Errorf("%s proposal %s: %w: only the requester or an admin may", action, p.ID, ErrForbidden)
		}
		return fmt.Errorf("%s proposal %s: %w", action, p.ID, &PolicyError{
			Rule: fmt.Sprintf("the %s policy lets only %s decide", p.Quorum.Key, strings.Join(pol.Deciders, ", "))})
	}
	if action == "approve" && !pol.SelfApproval && user == p.RequestedBy {
		return fmt.Errorf("%s proposal %s: %w", action, p.ID, &PolicyError{
			Rule: fmt.Sprintf("self_approval is off in the %s policy: the requester's own approval does not count", p.Quorum.Key)})
	}
	return nil
}

// policyAllows reports whether one of the policy's deciders names user.
// A role that cannot be checked (no adapter support, the platform did not
// answer) does not let anyone in.
func (e *Engine) policyAllows(ctx context.Context, p Proposal, user string) bool {
	for _, d := range p.Quorum.Policy.Deciders {
		switch {
		case d == board.DeciderAnyMember:
			return true
		case d == board.DeciderRequester:
			if user == p.RequestedBy {
				return true
			}
		case d == board.DeciderAdmins:
			if slices.Contains(e.cfg.Admins, user) {
				return true
			}
		case strings.HasPrefix(d, board.DeciderSlackGroup):
			if e.inSlackGroup(ctx, p.Thread.Channel, strings.TrimPrefix(d, board.DeciderSlackGroup), user) {
				return true
			}
		case strings.HasPrefix(d, board.DeciderMatrixPower):
			if e.hasPower(ctx, p.Thread.Channel, strings.TrimPrefix(d, board.DeciderMatrixPower), user) {
				return true
			}
		case d == user:
			return true
		}
	}
	return false
}

func (e *Engine) hasPower(ctx context.Context, ch Channel, level, user string) bool {
	need, err := strconv.Atoi(level)
	pl, ok := e.poster(ch.Source).(PowerLevels)
	if err != nil || !ok || ch.Source != SourceMatrix {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.PostTimeout)
	defer cancel()
	have, err := pl.PowerLevel(ctx, ch.ID, user)
	if err != nil {
		e.logger.Warn("read power level", "room", ch.ID, "user", user, "err", err)
		return false
	}
	return have >= need
}

func (e *Engine) inSlackGroup(ctx context.Context, ch Channel, group, user string) bool {
	sg, ok := e.poster(ch.Source).(SlackGroups)
	if !ok || ch.Source != SourceSlack {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.PostTimeout)
	defer cancel()
	in, err := sg.InGroup(ctx, group, user)
	if err != nil {
		e.logger.Warn("read slack user group", "group", group, "user", user, "err", err)
		return false
	}
	return in
}

// beingDecided reports whether err says someone else holds the proposal's
// decision right now.
func beingDecided(err error) bool {
	var de *DecidedError
	return errors.As(err, &de) && de.State == "being decided"
}

// approveQuorum records user's approval of a proposal that needs several.
// Short of the quorum it returns the pending Approval. The approval that
// completes it comes back with the proposal claimed (done nil), for
// Approve to execute; if another completing approver executed it
// meanwhile, done is that approval. held is the caller's claim, nil when
// it holds none (when it does, it checked user may approve).
func (e *Engine) approveQuorum(ctx context.Context, p Proposal, held *claim, user string) (_ Proposal, _ *claim, done *Approval, _ error) {
	if held != nil {
		// Approvals are recorded without the claim, so concurrent
		// approvers are never told "being decided".
		e.release(ctx, held)
	} else if err := e.decidable(ctx, p, user, "approve"); err != nil {
		return p, nil, nil, err
	}
	ps := e.policyStore()
	detail, _ := json.Marshal(withVia(ctx, map[string]any{"version": p.Version, "needed": p.Quorum.Needed, "policy": p.Quorum.Key}))
	approvers, err := ps.AddApproval(ctx, board.ApprovalChange{ProposalID: p.ID, User: user, Channel: p.Thread.Channel.Key(), Detail: detail})
	if errors.Is(err, board.ErrProposalClosed) {
		err := e.settled(ctx, p.ID, &done)
		return p, nil, done, err
	}
	if err != nil {
		return p, nil, nil, unavailable("record approval of "+string(p.ID), err)
	}
	q := *p.Quorum
	q.Approvals = approvers
	p.Quorum = &q
	if len(approvers) < q.Needed {
		e.say(p.Thread, "update preview", func(ctx context.Context, poster Poster) error {
			return e.updatePreview(ctx, poster, p)
		}, "proposal", p.ID)
		return p, nil, &Approval{ProposalID: p.ID, State: ProposalPending, Approvals: approvers, Needed: q.Needed}, nil
	}
	return e.claimCompleted(ctx, p.ID, user)
}

// claimCompleted takes the decision of a proposal whose quorum is
// complete. Every approver who completed it gets here, possibly at once
// and on several replicas: one claims and executes, the others wait for
// its outcome (the claim frees itself within ClaimTTL) and answer with the
// same board. The claim comes back held (with done nil) to the one that
// executes.
func (e *Engine) claimCompleted(ctx context.Context, id ProposalID, user string) (Proposal, *claim, *Approval, error) {
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
			var done *Approval
			err := e.settled(ctx, id, &done)
			return Proposal{}, nil, done, err
		case err != nil:
			return Proposal{}, nil, nil, unavailable("claim proposal", err)
		case claimed && p.State == ProposalPending && e.deps.Now().Before(p.ExpiresAt):
			// A withdrawal holds the claim too: the approvals read now,
			// under the claim, are the ones the board is created on.
			now, err := e.policyStore().Approvals(ctx, id)
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
				return p, nil, &Approval{ProposalID: id, State: ProposalPending, Approvals: now, Needed: q.Needed}, nil
			}
			return p, c, nil, nil
		case claimed:
			e.release(ctx, c)
		}
		if p.State == ProposalApproved {
			return p, nil, &Approval{ProposalID: id, BoardID: p.BoardID, BoardURL: p.BoardURL}, nil
		}
		if p.State != ProposalPending {
			return p, nil, nil, &DecidedError{State: p.State, By: p.DecidedBy, BoardID: p.BoardID}
		}
		if !e.deps.Now().Before(p.ExpiresAt) {
			return p, nil, nil, fmt.Errorf("proposal %s: %w", id, ErrExpired)
		}
		if rec, err := e.deps.Boards.Proposal(ctx, id); err == nil && rec.State != string(ProposalPending) {
			var done *Approval
			err := e.settledFrom(rec, &done)
			return p, nil, done, err
		}
		if time.Now().After(deadline) {
			return p, nil, nil, &DecidedError{State: "being decided"}
		}
		select {
		case <-ctx.Done():
			return p, nil, nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// settled reads how a proposal that is no longer pending ended: an
// approval sets *done (every approver of a completed quorum gets the
// board), anything else is the error to return.
func (e *Engine) settled(ctx context.Context, id ProposalID, done **Approval) error {
	rec, err := e.deps.Boards.Proposal(ctx, id)
	if errors.Is(err, board.ErrNotFound) {
		return fmt.Errorf("proposal %s: %w", id, ErrExpired)
	}
	if err != nil {
		return unavailable("read proposal", err)
	}
	return e.settledFrom(rec, done)
}

func (e *Engine) settledFrom(rec board.ProposalRecord, done **Approval) error {
	switch ProposalState(rec.State) {
	case ProposalApproved:
		*done = &Approval{ProposalID: rec.ID, BoardID: rec.BoardID, BoardURL: board.BoardURL(e.cfg.PublicURL, rec.BoardID)}
		return nil
	case ProposalPending:
		return fmt.Errorf("proposal %s: %w", rec.ID, ErrExpired)
	}
	return &DecidedError{State: ProposalState(rec.State), By: rec.DecidedBy, BoardID: rec.BoardID}
}

// Withdraw takes back user's approval of a pending proposal that has not
// reached its quorum yet. ErrNothingToWithdraw when user has none; a
// *DecidedError "being decided" while the approval completing the quorum
// is executing.
func (e *Engine) Withdraw(ctx context.Context, id ProposalID, user string) (Proposal, error) {
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
	approvers, err := e.policyStore().WithdrawApproval(ctx, board.ApprovalChange{ProposalID: id, User: user, Channel: p.Thread.Channel.Key()})
	switch {
	case errors.Is(err, board.ErrProposalClosed):
		var done *Approval
		if err := e.settled(ctx, id, &done); err != nil {
			return p, err
		}
		return p, &DecidedError{State: ProposalApproved, BoardID: done.BoardID}
	case errors.Is(err, board.ErrNotFound):
		return p, fmt.Errorf("withdraw from %s: %w", id, ErrNothingToWithdraw)
	case err != nil:
		return p, unavailable("withdraw approval of "+string(id), err)
	}
	q := *p.Quorum
	q.Approvals = approvers
	p.Quorum = &q
	e.say(p.Thread, "update preview", func(ctx context.Context, poster Poster) error {
		return e.updatePreview(ctx, poster, p)
	}, "proposal", p.ID)
	return p, nil
}

// withApprovals fills in who has approved a proposal that needs several
// approvals, from Postgres (the Redis copy holds the policy, not the
// approvals, which arrive concurrently).
func (e *Engine) withApprovals(ctx context.Context, p Proposal) Proposal {
	ps := e.policyStore()
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

func deref(a *Approval) Approval {
	if a == nil {
		return Approval{}
	}
	return *a
}

// DescribePolicy is a policy in plain text, for surfaces without their
// own rendering (the Matrix adapter's `!bobnet policy`).
func DescribePolicy(in board.PolicyInForce) string {
	p := in.Policy
	var b strings.Builder
	fmt.Fprintf(&b, "Approval policy %s: %s decide", in.Key, strings.Join(p.Deciders, ", "))
	fmt.Fprintf(&b, "; %d approval(s) needed", max(p.Approvals, 1))
	if ac := p.AboveCards; ac != nil {
		fmt.Fprintf(&b, ", %d for a plan of more than %d cards", ac.Approvals, ac.Cards)
	}
	if !p.SelfApproval {
		b.WriteString("; the requester's own approval does not count")
	}
	if bu := p.Budget; bu != nil && bu.TokensPerDay > 0 {
		fmt.Fprintf(&b, "; model budget %d tokens a day (UTC)", bu.TokensPerDay)
	}
	b.WriteString(".")
	return b.String()
}
