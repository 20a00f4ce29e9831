package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bobnet/bobnet/board"
)

// PolicyStore keeps approval policies: the policy of a channel and the
// approvals given so far. *store.Store is one; an engine without one
// (Deps.Policies nil) keeps the single global rule (requester, admins,
// any member).
type PolicyStore interface {
	PolicyFor(ctx context.Context, channel string) (board.PolicyInForce, error)
	AddApproval(ctx context.Context, c board.ApprovalChange) ([]string, error)
	WithdrawApproval(ctx context.Context, c board.ApprovalChange) ([]string, error)
	Approvals(ctx context.Context, proposalID board.ProposalID) ([]string, error)
}

// PowerLevels tells a Matrix room member's power level, for
// "matrix_power:N" deciders. The Matrix adapter is one (from the room's
// m.room.power_levels state: users[user], else users_default), registered
// as the Registration.PowerLevels of SourceMatrix. Without it,
// "matrix_power:N" lets nobody decide.
type PowerLevels interface {
	PowerLevel(ctx context.Context, room, user string) (int, error)
}

// SlackGroups tells whether a Slack user is in a user group of the
// channel's workspace, for "slack_group:S…" deciders; the Slack adapter
// is one (usergroups.users.list), registered as the Registration.Groups
// of SourceSlack. Without it, "slack_group:" lets nobody decide.
type SlackGroups interface {
	InGroup(ctx context.Context, channel, group, user string) (bool, error)
}

// BuiltinPolicyKey names the policy made from the engine's Config when no
// policy is stored for a channel, its source or the default.
const BuiltinPolicyKey = "built-in"

// MatrixModeratorLevel is the power level Matrix calls moderator; by
// default the moderators of a Matrix room decide its proposals.
const MatrixModeratorLevel = 50

// PolicyError is a refusal by the policy, naming the rule; it matches
// ErrForbidden.
type PolicyError struct {
	Rule string
}

func (e *PolicyError) Error() string { return "not allowed: " + e.Rule }

// Is makes errors.Is(err, ErrForbidden) true.
func (e *PolicyError) Is(target error) bool { return target == ErrForbidden }

// BuiltinPolicy is the policy of a channel of src when none is stored:
// the requester and the admins decide (any member with
// AnyMemberMayDecide), and in Matrix the room's moderators too.
func (e *Engine) BuiltinPolicy(src board.Source) board.Policy {
	d := []string{board.DeciderRequester, board.DeciderAdmins}
	if e.cfg.AnyMemberMayDecide {
		d = append(d, board.DeciderAnyMember)
	}
	if src == board.SourceMatrix {
		d = append(d, board.DeciderMatrixPower+strconv.Itoa(MatrixModeratorLevel))
	}
	return board.Policy{Deciders: d, Approvals: 1, SelfApproval: true}
}

// PolicyFor returns the policy in force in ch now.
func (e *Engine) PolicyFor(ctx context.Context, ch board.Channel) (board.PolicyInForce, error) {
	ps := e.deps.Policies
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

// policyRead is a channel's policy read beside other work.
type policyRead struct {
	done chan struct{}
	in   board.PolicyInForce
	err  error
}

// readPolicy starts reading ch's policy in force; nil when the store
// keeps no policies.
func (e *Engine) readPolicy(ctx context.Context, ch board.Channel) *policyRead {
	if e.deps.Policies == nil {
		return nil
	}
	pr := &policyRead{done: make(chan struct{})}
	go func() {
		defer close(pr.done)
		pr.in, pr.err = e.PolicyFor(ctx, ch)
	}()
	return pr
}

// wait is the policy read, once it is.
func (pr *policyRead) wait() (board.PolicyInForce, error) {
	if pr == nil {
		return board.PolicyInForce{}, nil
	}
	<-pr.done
	return pr.in, pr.err
}

// policyIn is ch's policy in force as pol read it, or read now when pol
// is nil.
func (e *Engine) policyIn(ctx context.Context, ch board.Channel, pol *policyRead) (board.PolicyInForce, error) {
	if pol != nil {
		return pol.wait()
	}
	return e.PolicyFor(ctx, ch)
}

// quorumFor is the quorum of a new proposal in ch: a revision keeps the
// policy its request was made under, with no approvals (the plan
// changed); anything else takes the channel's policy, as pol read it
// (nil: read now). Nil when the store keeps no policies.
func (e *Engine) quorumFor(ctx context.Context, ch board.Channel, cards int, prev *board.Proposal, pol *policyRead) (*board.Quorum, error) {
	if e.deps.Policies == nil {
		return nil, nil
	}
	var in board.PolicyInForce
	if prev != nil && prev.Quorum != nil {
		in = board.PolicyInForce{Key: prev.Quorum.Key, Policy: prev.Quorum.Policy}
	} else {
		var err error
		if in, err = e.policyIn(ctx, ch, pol); err != nil {
			return nil, err
		}
	}
	return &board.Quorum{Key: in.Key, Policy: in.Policy, Needed: in.Policy.Needed(cards), Approvals: []string{}}, nil
}

// mayAct checks that user may take action on p under the policy it was
// proposed under (or the global rule for a proposal without one).
func (e *Engine) mayAct(ctx context.Context, p board.Proposal, user, action string) error {
	if p.Quorum == nil {
		if !e.mayDecide(p, user) {
			return fmt.Errorf("%s proposal %s: %w: only the requester or an admin may", action, p.ID, ErrForbidden)
		}
		return nil
	}
	pol := p.Quorum.Policy
	if !e.decidesIn(p.Thread.Channel.Key(), user) && !e.policyAllows(ctx, p, user) {
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
func (e *Engine) policyAllows(ctx context.Context, p board.Proposal, user string) bool {
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

func (e *Engine) hasPower(ctx context.Context, ch board.Channel, level, user string) bool {
	need, err := strconv.Atoi(level)
	pl := e.registration(ch.Source).PowerLevels
	if err != nil || pl == nil || ch.Source != board.SourceMatrix {
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

func (e *Engine) inSlackGroup(ctx context.Context, ch board.Channel, group, user string) bool {
	sg := e.registration(ch.Source).Groups
	if sg == nil || ch.Source != board.SourceSlack {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.PostTimeout)
	defer cancel()
	in, err := sg.InGroup(ctx, ch.ID, group, user)
	if err != nil {
		e.logger.Warn("read slack user group", "group", group, "user", user, "err", err)
		return false
	}
	return in
}
