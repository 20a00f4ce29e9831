package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
	// its workspace's ($3), its source's ($2) and the default.
	selectPolicyFor = `SELECT channel, policy FROM policies WHERE channel IN ($1, $2, $3, 'default')
ORDER BY CASE channel WHEN $1 THEN 0 WHEN $3 THEN 1 WHEN $2 THEN 2 ELSE 3 END LIMIT 1`
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

// PolicyFor returns the policy of a channel: its own, else its
// workspace's for a Slack channel of multi-workspace mode
// ("slack:T0123/*" for "slack:T0123/C0456"), else its source's
// ("slack:*"), else the default. ErrNotFound when none of them is stored.
func (s *Store) PolicyFor(ctx context.Context, channel string) (board.PolicyInForce, error) {
	src, id, _ := strings.Cut(channel, ":")
	workspace := "" // matches no key
	if i := strings.LastIndexByte(id, '/'); i > 0 {
		workspace = src + ":" + id[:i] + "/*"
	}
	var in board.PolicyInForce
	var js []byte
	err := s.pool.QueryRow(ctx, selectPolicyFor, channel, src+":*", workspace).Scan(&in.Key, &js)
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
