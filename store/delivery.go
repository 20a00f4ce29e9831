package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

const insertDelivery = `INSERT INTO webhook_deliveries (hook, delivery_id, request_id) VALUES ($1, $2, $3)
ON CONFLICT (hook, delivery_id) DO NOTHING RETURNING request_id`

// selectDelivery is a statement of its own, not part of the insert: after
// ON CONFLICT waited for a concurrent insert of the same delivery, only a
// new snapshot sees the row that insert committed.
const selectDelivery = `SELECT request_id FROM webhook_deliveries WHERE hook = $1 AND delivery_id = $2`

// RecordDelivery remembers which request a webhook delivery started. When
// the delivery was recorded before, nothing changes and the result has
// the first request's id with IsNew false; recording the same request
// again (a worker retrying after a crash) answers that same id.
func (s *Store) RecordDelivery(ctx context.Context, d board.Delivery) (board.DeliveryResult, error) {
	var first board.RequestID
	err := s.pool.QueryRow(ctx, insertDelivery, d.Hook, d.ID, d.RequestID).Scan(&first)
	if err == nil {
		return board.DeliveryResult{RequestID: first, IsNew: true}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return board.DeliveryResult{}, fmt.Errorf("record delivery %s/%s: %w", d.Hook, d.ID, err)
	}
	if err := s.pool.QueryRow(ctx, selectDelivery, d.Hook, d.ID).Scan(&first); err != nil {
		return board.DeliveryResult{}, fmt.Errorf("read delivery %s/%s: %w", d.Hook, d.ID, err)
	}
	return board.DeliveryResult{RequestID: first}, nil
}
