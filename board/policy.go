package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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
// "<source>:*" or a channel key "<source>:<id>".
func ValidPolicyKey(key string) bool {
	if key == DefaultPolicyKey {
		return true
	}
	src, id, ok := strings.Cut(key, ":")
	return ok && src != "" && id != "" && len(key) <= 300 && !strings.ContainsAny(key, " \t\n/")
}

// PolicyInForce is a policy and the key it was found under.
type PolicyInForce struct {
	Key    string `json:"key"` // the channel, "<source>:*" or "default"
	Policy Policy `json:"policy"`
}

const (
	upsertPolicyAPI = `INSERT INTO policies (channel, policy, source, updated_by) VALUES ($1, $2, 'api', $3)
ON CONFLICT (channel) DO UPDATE SET policy = excluded.policy, source = 'api', updated_by = excluded.updated_by, updated_at = now()`

	// upsertPolicyFile leaves a policy set through the API alone: the API
	// is the later word.
	upsertPolicyFile = `INSERT INTO policies (channel, policy, source, updated_by) VALUES ($1, $2, 'file', 'policy file')
ON CONFLICT (channel) DO UPDATE SET policy = excluded.policy, updated_at = now() WHERE policies.source = 'file'`

	selectPolicy = `SELECT policy FROM policies WHERE channel = $1`

	selectPolicies = `SELECT channel, policy FROM policies ORDER BY channel`

	// selectPolicyFor finds the most specific of the channel's own policy,
	// its source's and the default.
	selectPolicyFor = `SELECT channel, policy FROM policies WHERE channel IN ($1, $2, 'default')
ORDER BY CASE channel WHEN $1 THEN 0 WHEN $2 THEN 1 ELSE 2 END LIMIT 1`
)

// PutPolicy sets the policy named key (a channel, "<source>:*" or
// "default") and audits the change by actor.
func (s *Store) PutPolicy(ctx context.Context, key string, p Policy, actor string) error {
	if !ValidPolicyKey(key) {
		return fmt.Errorf("%w: %q is not default, <source>:* or <source>:<id>", ErrInvalidPolicy, key)
	}
	if err := p.Validate(); err != nil {
		return err
	}
	js, _ := json.Marshal(p)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, upsertPolicyAPI, key, js, actor); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, insertAudit, actor, "policy_changed", key, "", "", js, "")
		return err
	})
	if err != nil {
		return fmt.Errorf("put policy %s: %w", key, err)
	}
	return nil
}

// WriteFilePolicies writes the policies of the policy file, except those set
// through the API since, which stay as set.
func (s *Store) WriteFilePolicies(ctx context.Context, set map[string]Policy) error {
	b := &pgx.Batch{}
	for key, p := range set {
		if !ValidPolicyKey(key) {
			return fmt.Errorf("%w: %q is not default, <source>:* or <source>:<id>", ErrInvalidPolicy, key)
		}
		if err := p.Validate(); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		js, _ := json.Marshal(p)
		b.Queue(upsertPolicyFile, key, js)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write the policy file's policies: %w", err)
	}
	return nil
}

// Policy returns the policy stored under key. ErrNotFound when there is
// none.
func (s *Store) Policy(ctx context.Context, key string) (Policy, error) {
	var js []byte
	err := s.pool.QueryRow(ctx, selectPolicy, key).Scan(&js)
	if errors.Is(err, pgx.ErrNoRows) {
		return Policy{}, fmt.Errorf("policy %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", key, err)
	}
	var p Policy
	if err := json.Unmarshal(js, &p); err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", key, err)
	}
	return p, nil
}

// Policies returns every stored policy by key.
func (s *Store) Policies(ctx context.Context) (map[string]Policy, error) {
	rows, err := s.pool.Query(ctx, selectPolicies)
	if err != nil {
		return nil, fmt.Errorf("list policies: %w", err)
	}
	out := map[string]Policy{}
	var key string
	var js []byte
	_, err = pgx.ForEachRow(rows, []any{&key, &js}, func() error {
		var p Policy
		if err := json.Unmarshal(js, &p); err != nil {
			return fmt.Errorf("policy %s: %w", key, err)
		}
		out[key] = p
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list policies: %w", err)
	}
	return out, nil
}

// PolicyFor returns the policy of a channel: its own, else its source's
// ("slack:*"), else the default. ErrNotFound when none of them is stored.
func (s *Store) PolicyFor(ctx context.Context, channel string) (PolicyInForce, error) {
	src, _, _ := strings.Cut(channel, ":")
	var in PolicyInForce
	var js []byte
	err := s.pool.QueryRow(ctx, selectPolicyFor, channel, src+":*").Scan(&in.Key, &js)
	if errors.Is(err, pgx.ErrNoRows) {
		return PolicyInForce{}, fmt.Errorf("policy for %s: %w", channel, ErrNotFound)
	}
	if err != nil {
		return PolicyInForce{}, fmt.Errorf("policy for %s: %w", channel, err)
	}
	if err := json.Unmarshal(js, &in.Policy); err != nil {
		return PolicyInForce{}, fmt.Errorf("policy for %s: %w", channel, err)
	}
	return in, nil
}

const (
	// lockProposalPending holds the proposal's row against a decision
	// while an approval is added or withdrawn, and says whether it is
	// still pending.
	lockProposalPending = `SELECT state FROM proposals WHERE id = $1 FOR SHARE`

	// lockChainOf takes the lock of a recorded proposal's chain (see
	// lockChain), so a change of its approvals waits for an execution in
	// flight and the approvals an execution was decided on stay as they
	// were.
	lockChainOf = `SELECT pg_advisory_xact_lock(hashtextextended(coalesce(chain, id), 7)) FROM proposals WHERE id = $1`

	insertApproval = `INSERT INTO proposal_approvals (proposal_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`

	deleteApproval = `DELETE FROM proposal_approvals WHERE proposal_id = $1 AND user_id = $2`

	selectApprovals = `SELECT user_id FROM proposal_approvals WHERE proposal_id = $1 ORDER BY at, user_id`
)

// ApprovalChange is one approval given or withdrawn.
type ApprovalChange struct {
	ProposalID ProposalID
	User       string
	Channel    string
	// Detail goes into the audit event.
	Detail json.RawMessage
}

// AddApproval records that c.User approves c.ProposalID, with an
// "approval_recorded" audit event, and returns everyone who has approved
// so far in the order they did. Approving twice changes nothing.
// ErrProposalClosed when the proposal is no longer pending; ErrNotFound
// when Postgres has no record of it.
func (s *Store) AddApproval(ctx context.Context, c ApprovalChange) ([]string, error) {
	return s.changeApproval(ctx, c, insertApproval, "approval_recorded")
}

// WithdrawApproval removes c.User's approval of c.ProposalID, with an
// "approval_withdrawn" audit event, and returns the approvals left.
// ErrNotFound when the user had not approved it (or there is no such
// proposal); ErrProposalClosed when it is no longer pending.
func (s *Store) WithdrawApproval(ctx context.Context, c ApprovalChange) ([]string, error) {
	return s.changeApproval(ctx, c, deleteApproval, "approval_withdrawn")
}

func (s *Store) changeApproval(ctx context.Context, c ApprovalChange, stmt, action string) ([]string, error) {
	var users []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockChainOf, c.ProposalID); err != nil {
			return err
		}
		var state string
		err := tx.QueryRow(ctx, lockProposalPending, c.ProposalID).Scan(&state)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if state != "pending" {
			return fmt.Errorf("%w: it is %s", ErrProposalClosed, state)
		}
		tag, err := tx.Exec(ctx, stmt, c.ProposalID, c.User)
		if err != nil {
			return err
		}
		switch {
		case tag.RowsAffected() == 1:
			if _, err := tx.Exec(ctx, insertAudit, c.User, action, c.Channel, c.ProposalID, "", nullJSON(c.Detail), ""); err != nil {
				return err
			}
		case stmt == deleteApproval:
			return fmt.Errorf("no approval by %s: %w", c.User, ErrNotFound)
		}
		users, err = collectStrings(ctx, tx, selectApprovals, c.ProposalID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", action, c.ProposalID, err)
	}
	return users, nil
}

// Approvals returns who has approved a proposal so far, in order.
func (s *Store) Approvals(ctx context.Context, proposalID ProposalID) ([]string, error) {
	users, err := collectStrings(ctx, s.pool, selectApprovals, proposalID)
	if err != nil {
		return nil, fmt.Errorf("approvals of %s: %w", proposalID, err)
	}
	return users, nil
}

func collectStrings(ctx context.Context, q querier, sql string, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if out == nil {
		out = []string{}
	}
	return out, err
}

// nullJSON turns an empty JSON value into SQL NULL.
func nullJSON(js json.RawMessage) any {
	if len(js) == 0 {
		return nil
	}
	return []byte(js)
}

const (
	addUsage = `INSERT INTO model_usage (channel, day, tokens) VALUES ($1, $2, $3)
ON CONFLICT (channel, day) DO UPDATE SET tokens = model_usage.tokens + excluded.tokens RETURNING tokens`

	selectUsage = `SELECT coalesce((SELECT tokens FROM model_usage WHERE channel = $1 AND day = $2), 0)`
)

// AddTokens adds n model tokens to channel's use on the UTC day of at and
// returns the day's total.
func (s *Store) AddTokens(ctx context.Context, channel string, at time.Time, n int64) (int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, addUsage, channel, utcDay(at), n).Scan(&total); err != nil {
		return 0, fmt.Errorf("add model tokens of %s: %w", channel, err)
	}
	return total, nil
}

// TokensUsed returns the model tokens channel used on the UTC day of at.
func (s *Store) TokensUsed(ctx context.Context, channel string, at time.Time) (int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, selectUsage, channel, utcDay(at)).Scan(&total); err != nil {
		return 0, fmt.Errorf("model tokens of %s: %w", channel, err)
	}
	return total, nil
}

func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
