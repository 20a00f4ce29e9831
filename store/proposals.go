package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

const (
	insertProposal = `INSERT INTO proposals (id, channel, version, supersedes, requested_by, state, plan, created_at, expires_at, chain, policy)
VALUES ($1, $2, $3, nullif($4, ''), $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (id) DO NOTHING`

	// updateProposalState is a close's compare-and-set, made under the
	// chain's lock (lockChain).
	updateProposalState = `UPDATE proposals SET state = $2, decided_by = $3, decided_at = now()
WHERE id = $1 AND state = 'pending'`

	selectProposalState = `SELECT state FROM proposals WHERE id = $1`

	// insertClosedProposal records a proposal Postgres had no record of as
	// closed, so that an execution of it finds it closed.
	insertClosedProposal = `INSERT INTO proposals (id, channel, version, supersedes, requested_by, state, plan, decided_by, decided_at,
    created_at, expires_at, chain)
VALUES ($1, $2, $3, nullif($4, ''), $5, $6, $7, $8, now(), $9, $10, $11)`

	selectProposal = `SELECT id, channel, version, coalesce(supersedes, ''), requested_by, state, plan, decided_by,
    coalesce(board_id, ''), created_at, coalesce(expires_at, 'epoch'), coalesce(decided_at, 'epoch'), policy
FROM proposals WHERE id = $1`
)

// SaveProposal records a new pending proposal. One already saved under
// the same id (the same request planned twice) is left as it is:
// ErrProposalExists, and Proposal returns the one kept.
func (s *Store) SaveProposal(ctx context.Context, p board.ProposalRecord) error {
	if p.State == "" {
		p.State = "pending"
	}
	if p.Version == 0 {
		p.Version = 1
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Now()
	}
	var expires any
	if !p.ExpiresAt.IsZero() {
		expires = p.ExpiresAt
	}
	plan := []byte(p.Plan)
	if len(plan) == 0 {
		plan = []byte("{}")
	}
	if p.Chain == "" {
		p.Chain = p.ID
	}
	tag, err := s.pool.Exec(ctx, insertProposal, p.ID, p.Channel, p.Version, p.Supersedes, p.RequestedBy, p.State, plan, p.CreatedAt, expires, p.Chain, nullJSON(p.Policy))
	if err != nil {
		return fmt.Errorf("save proposal %s: %w", p.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("save proposal %s: %w", p.ID, board.ErrProposalExists)
	}
	return nil
}

// SetProposalState moves a pending proposal to cancelled, expired or
// superseded: a compare-and-set made under the lock of p's chain, which
// Execute holds for its whole transaction, so a close and an approval of
// one proposal never both succeed, however long either takes. An approved
// or already closed proposal is not changed: ErrProposalClosed. A proposal
// Postgres has no record of is recorded closed, from p, so a later
// approval of it is refused too.
func (s *Store) SetProposalState(ctx context.Context, p board.ProposalRecord, state, decidedBy string) error {
	switch state {
	case "cancelled", "expired", "superseded":
	default:
		return fmt.Errorf("set proposal %s to %q: not a closing state", p.ID, state)
	}
	chain := p.Chain
	if chain == "" {
		chain = p.ID
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockChain, chain); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, updateProposalState, p.ID, state, decidedBy)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			var was string
			err = tx.QueryRow(ctx, selectProposalState, p.ID).Scan(&was)
			if err == nil {
				return fmt.Errorf("%w: it is %s", board.ErrProposalClosed, was)
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if err := s.insertClosed(ctx, tx, p, chain, state, decidedBy); err != nil {
				return err
			}
		}
		return InsertEvents(ctx, tx, p.Events)
	})
	if err != nil {
		return fmt.Errorf("set proposal %s %s: %w", p.ID, state, err)
	}
	return nil
}

func (s *Store) insertClosed(ctx context.Context, tx pgx.Tx, p board.ProposalRecord, chain board.ProposalID, state, decidedBy string) error {
	plan := []byte(p.Plan)
	if len(plan) == 0 {
		plan = []byte("{}")
	}
	created, expires := any(time.Now()), any(nil)
	if !p.CreatedAt.IsZero() {
		created = p.CreatedAt
	}
	if !p.ExpiresAt.IsZero() {
		expires = p.ExpiresAt
	}
	_, err := tx.Exec(ctx, insertClosedProposal, p.ID, p.Channel, max(p.Version, 1), p.Supersedes, p.RequestedBy, state, plan,
		decidedBy, created, expires, chain)
	return err
}

// Proposal returns a proposal's record. ErrNotFound when there is none.
func (s *Store) Proposal(ctx context.Context, id board.ProposalID) (board.ProposalRecord, error) {
	var p board.ProposalRecord
	var plan []byte
	err := s.pool.QueryRow(ctx, selectProposal, id).Scan(&p.ID, &p.Channel, &p.Version, &p.Supersedes, &p.RequestedBy,
		&p.State, &plan, &p.DecidedBy, &p.BoardID, &p.CreatedAt, &p.ExpiresAt, &p.DecidedAt, &p.Policy)
	if errors.Is(err, pgx.ErrNoRows) {
		return board.ProposalRecord{}, fmt.Errorf("proposal %s: %w", id, board.ErrNotFound)
	}
	if err != nil {
		return board.ProposalRecord{}, fmt.Errorf("proposal %s: %w", id, err)
	}
	p.Plan = plan
	if p.ExpiresAt.Unix() == 0 {
		p.ExpiresAt = time.Time{}
	}
	if p.DecidedAt.Unix() == 0 {
		p.DecidedAt = time.Time{}
	}
	return p, nil
}
