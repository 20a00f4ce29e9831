package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bobnet/bobnet/board"
)

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
