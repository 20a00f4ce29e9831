package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

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
func (s *Store) PutPolicy(ctx context.Context, key string, p board.Policy, actor string) error {
	if !board.ValidPolicyKey(key) {
		return fmt.Errorf("%w: %q is not default, <source>:* or <source>:<id>", board.ErrInvalidPolicy, key)
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
func (s *Store) WriteFilePolicies(ctx context.Context, set map[string]board.Policy) error {
	b := &pgx.Batch{}
	for key, p := range set {
		if !board.ValidPolicyKey(key) {
			return fmt.Errorf("%w: %q is not default, <source>:* or <source>:<id>", board.ErrInvalidPolicy, key)
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
func (s *Store) Policy(ctx context.Context, key string) (board.Policy, error) {
	var js []byte
	err := s.pool.QueryRow(ctx, selectPolicy, key).Scan(&js)
	if errors.Is(err, pgx.ErrNoRows) {
		return board.Policy{}, fmt.Errorf("policy %s: %w", key, board.ErrNotFound)
	}
	if err != nil {
		return board.Policy{}, fmt.Errorf("policy %s: %w", key, err)
	}
	var p board.Policy
	if err := json.Unmarshal(js, &p); err != nil {
		return board.Policy{}, fmt.Errorf("policy %s: %w", key, err)
	}
	return p, nil
}

// Policies returns every stored policy by key.
func (s *Store) Policies(ctx context.Context) (map[string]board.Policy, error) {
	rows, err := s.pool.Query(ctx, selectPolicies)
	if err != nil {
		return nil, fmt.Errorf("list policies: %w", err)
	}
	out := map[string]board.Policy{}
	var key string
	var js []byte
	_, err = pgx.ForEachRow(rows, []any{&key, &js}, func() error {
		var p board.Policy
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
func (s *Store) PolicyFor(ctx context.Context, channel string) (board.PolicyInForce, error) {
	src, _, _ := strings.Cut(channel, ":")
	var in board.PolicyInForce
	var js []byte
	err := s.pool.QueryRow(ctx, selectPolicyFor, channel, src+":*").Scan(&in.Key, &js)
	if errors.Is(err, pgx.ErrNoRows) {
		return board.PolicyInForce{}, fmt.Errorf("policy for %s: %w", channel, board.ErrNotFound)
	}
	if err != nil {
		return board.PolicyInForce{}, fmt.Errorf("policy for %s: %w", channel, err)
	}
	if err := json.Unmarshal(js, &in.Policy); err != nil {
		return board.PolicyInForce{}, fmt.Errorf("policy for %s: %w", channel, err)
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

// AddApproval records that c.User approves c.ProposalID, with an
// "approval_recorded" audit event, and returns everyone who has approved
// so far in the order they did. Approving twice changes nothing.
// ErrProposalClosed when the proposal is no longer pending; ErrNotFound
// when Postgres has no record of it.
func (s *Store) AddApproval(ctx context.Context, c board.ApprovalChange) ([]string, error) {
	return s.changeApproval(ctx, c, insertApproval, "approval_recorded")
}

// WithdrawApproval removes c.User's approval of c.ProposalID, with an
// "approval_withdrawn" audit event, and returns the approvals left.
// ErrNotFound when the user had not approved it (or there is no such
// proposal); ErrProposalClosed when it is no longer pending.
func (s *Store) WithdrawApproval(ctx context.Context, c board.ApprovalChange) ([]string, error) {
	return s.changeApproval(ctx, c, deleteApproval, "approval_withdrawn")
}

func (s *Store) changeApproval(ctx context.Context, c board.ApprovalChange, stmt, action string) ([]string, error) {
	var users []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockChainOf, c.ProposalID); err != nil {
			return err
		}
		var state string
		err := tx.QueryRow(ctx, lockProposalPending, c.ProposalID).Scan(&state)
		if errors.Is(err, pgx.ErrNoRows) {
			return board.ErrNotFound
		}
		if err != nil {
			return err
		}
		if state != "pending" {
			return fmt.Errorf("%w: it is %s", board.ErrProposalClosed, state)
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
			return fmt.Errorf("no approval by %s: %w", c.User, board.ErrNotFound)
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
func (s *Store) Approvals(ctx context.Context, proposalID board.ProposalID) ([]string, error) {
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
