package board

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalidPolicy means a policy cannot be used as written; the error
// says which field and why.
var ErrInvalidPolicy = errors.New("invalid policy")

// DefaultPolicyKey names the policy of every channel without its own.
const DefaultPolicyKey = "default"

// Decider names accepted in a policy besides plain user ids.
const (
	DeciderRequester   = "requester"
	DeciderAdmins      = "admins"
	DeciderAnyMember   = "any_member"
	DeciderSlackGroup  = "slack_group:"  // followed by a Slack user group id, S…
	DeciderMatrixPower = "matrix_power:" // followed by a power level, 0..100
)

// Policy says who decides a channel's proposals and how many of them must
// approve, and what the channel may spend on the model.
type Policy struct {
	// Deciders are who may approve, revise and cancel: "requester",
	// "admins", "any_member", "slack_group:S…", "matrix_power:N" or user
	// ids.
	Deciders []string `json:"deciders"`
	// Approvals is how many distinct deciders must approve (at least 1).
	Approvals int `json:"approvals"`
	// SelfApproval says whether the requester's own approval counts.
	SelfApproval bool `json:"self_approval"`
	// AboveCards is a stricter quorum for plans with more cards.
	AboveCards *AboveCards `json:"above_cards,omitempty"`
	// Budget caps the channel's model use; nil means unlimited.
	Budget *Budget `json:"budget,omitempty"`
}

// AboveCards asks for Approvals approvals of a plan with more than Cards
// cards.
type AboveCards struct {
	Cards     int `json:"cards"`
	Approvals int `json:"approvals"`
}

// Budget caps a channel's model use per UTC day.
type Budget struct {
	TokensPerDay int64 `json:"tokens_per_day"`
}

// Needed is how many approvals a plan of cards cards needs under p.
func (p Policy) Needed(cards int) int {
	n := max(p.Approvals, 1)
	if p.AboveCards != nil && cards > p.AboveCards.Cards && p.AboveCards.Approvals > n {
		n = p.AboveCards.Approvals
	}
	return n
}

// Validate reports the first thing wrong with p, as an error matching
// ErrInvalidPolicy.
func (p Policy) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidPolicy, fmt.Sprintf(format, a...))
	}
	if len(p.Deciders) == 0 {
		return bad("deciders: name at least one (requester, admins, any_member, user ids, slack_group:S…, matrix_power:N)")
	}
	for i, d := range p.Deciders {
		if err := validDecider(d); err != nil {
			return bad("deciders[%d]: %v", i, err)
		}
	}
	if p.Approvals < 1 || p.Approvals > 50 {
		return bad("approvals: must be between 1 and 50, not %d", p.Approvals)
	}
	if a := p.AboveCards; a != nil {
		if a.Cards < 1 {
			return bad("above_cards.cards: must be at least 1, not %d", a.Cards)
		}
		if a.Approvals < 1 || a.Approvals > 50 {
			return bad("above_cards.approvals: must be between 1 and 50, not %d", a.Approvals)
		}
	}
	if b := p.Budget; b != nil && b.TokensPerDay < 0 {
		return bad("budget.tokens_per_day: must not be negative, not %d", b.TokensPerDay)
	}
	return nil
}

func validDecider(d string) error {
	switch {
	case d == DeciderRequester || d == DeciderAdmins || d == DeciderAnyMember:
		return nil
	case strings.TrimSpace(d) != d || d == "" || strings.ContainsAny(d, " \t\n"):
		return fmt.Errorf("%q is not a user id or decider kind", d)
	case strings.HasPrefix(d, DeciderSlackGroup):
		g := strings.TrimPrefix(d, DeciderSlackGroup)
		if len(g) < 2 || g[0] != 'S' {
			return fmt.Errorf("%q: a Slack user group id starts with S", d)
		}
		return nil
	case strings.HasPrefix(d, DeciderMatrixPower):
		n, err := strconv.Atoi(strings.TrimPrefix(d, DeciderMatrixPower))
		if err != nil || n < 0 || n > 100 {
			return fmt.Errorf("%q: the power level must be a number from 0 to 100", d)
		}
		return nil
	case strings.Contains(d, ":") && !strings.HasPrefix(d, "@"):
		// Matrix user ids (@alice:server) hold a colon; anything else
		// with one is a misspelt decider kind.
		return fmt.Errorf("%q is not a known decider kind", d)
	}
	return nil
}

// ValidPolicyKey reports whether key can name a policy: "default",
// "<source>:*" or a channel key "<source>:<id>". An id may hold a slash:
// in multi-workspace mode a Slack channel is "slack:T0123/C0123".
func ValidPolicyKey(key string) bool {
	if key == DefaultPolicyKey {
		return true
	}
	src, id, ok := strings.Cut(key, ":")
	return ok && src != "" && id != "" && len(key) <= 300 && !strings.ContainsAny(key, " \t\n")
}

// PolicyInForce is a policy and the key it was found under.
type PolicyInForce struct {
	Key    string `json:"key"` // the channel, "<source>:*" or "default"
	Policy Policy `json:"policy"`
}

// ApprovalChange is one approval given or withdrawn.
type ApprovalChange struct {
	ProposalID ProposalID
	User       string
	Channel    string
	// Detail goes into the audit event.
	Detail json.RawMessage
}
