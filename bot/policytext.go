package bot

import (
	"fmt"
	"strings"

	"github.com/bobnet/bobnet/board"
)

// PolicyName names where a policy came from, in words.
func PolicyName(key string) string {
	switch key {
	case BuiltinPolicyKey:
		return "BobNet's built-in rule"
	case board.DefaultPolicyKey:
		return "the default policy"
	}
	return "policy " + key
}

// DecidersText says who deciders are, in words: the requester, admins,
// any member; other renders the rest as its surface shows them (a user as
// a mention, a Slack group, a Matrix power level), or as they are when
// other is nil.
func DecidersText(deciders []string, other func(string) string) string {
	out := make([]string, len(deciders))
	for i, d := range deciders {
		switch {
		case d == board.DeciderRequester:
			out[i] = "the requester"
		case d == board.DeciderAdmins:
			out[i] = "admins"
		case d == board.DeciderAnyMember:
			out[i] = "any member"
		case other != nil:
			out[i] = other(d)
		default:
			out[i] = d
		}
	}
	return strings.Join(out, ", ")
}

// QuorumText describes a proposal's quorum for a preview: "1 of 2
// approvals: alice · decided under policy console:release by alice, bob ·
// the requester's own approval does not count". Empty for a proposal
// that needs one approval under the built-in rule. other renders deciders
// as DecidersText's does. The caller escapes it.
func QuorumText(p board.Proposal, other func(string) string) string {
	q := p.Quorum
	if q == nil || (q.Key == BuiltinPolicyKey && q.Needed <= 1) {
		return ""
	}
	var parts []string
	if q.Needed > 1 {
		s := fmt.Sprintf("%d of %d approvals", len(q.Approvals), q.Needed)
		if len(q.Approvals) > 0 {
			s += ": " + strings.Join(q.Approvals, ", ")
		}
		parts = append(parts, s)
	}
	parts = append(parts, "decided under "+PolicyName(q.Key)+" by "+DecidersText(q.Policy.Deciders, other))
	if !q.Policy.SelfApproval {
		parts = append(parts, "the requester's own approval does not count")
	}
	return strings.Join(parts, " · ")
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
