package store

import (
	"context"
	"fmt"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

const selectAudit = `SELECT id, at, actor, action, channel, proposal_id, board_id, detail FROM audit_events
WHERE ($1 = '' OR channel = $1) AND ($2 = '' OR proposal_id = $2) AND ($3 = '' OR board_id = $3)
ORDER BY id LIMIT $4`

// auditDetail is an event's detail as a query argument: NULL when empty.
func auditDetail(e board.AuditEvent) any {
	if len(e.Detail) > 0 {
		return []byte(e.Detail)
	}
	return nil
}

// RecordAudit writes one audit event. An event with a DedupeKey that was
// recorded before is not written again.
func (s *Store) RecordAudit(ctx context.Context, e board.AuditEvent) error {
	if _, err := s.pool.Exec(ctx, insertAudit, e.Actor, e.Action, e.Channel, e.ProposalID, e.BoardID, auditDetail(e), e.DedupeKey); err != nil {
		return fmt.Errorf("record audit %s: %w", e.Action, err)
	}
	return nil
}

// Audit returns the audit events matching f, oldest first.
func (s *Store) Audit(ctx context.Context, f board.AuditFilter) ([]board.AuditEvent, error) {
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	rows, _ := s.pool.Query(ctx, selectAudit, f.Channel, f.ProposalID, f.BoardID, f.Limit)
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (board.AuditEvent, error) {
		var e board.AuditEvent
		var detail []byte
		err := row.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.Channel, &e.ProposalID, &e.BoardID, &detail)
		e.Detail = detail
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	return events, nil
}
