package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

const insertDelivery = `INSERT INTO webhook_deliveries (hook, delivery_id, request_id, request_received_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (hook, delivery_id) DO NOTHING RETURNING request_id`

// selectDelivery is a statement of its own, not part of the insert: after
// ON CONFLICT waited for a concurrent insert of the same delivery, only a
// new snapshot sees the row that insert committed.
const selectDelivery = `SELECT request_id, request_received_at FROM webhook_deliveries WHERE hook = $1 AND delivery_id = $2`

// RecordDelivery remembers which request a webhook delivery started. When
// the delivery was recorded before, nothing changes and the result has
// the first request's id with IsNew false, and Own when that recording
// was this same request's (a worker retrying after a crash): the same id,
// received at the same time (to Postgres's microsecond; a row of before
// 0025 has no time, and a random id no other request shares).
func (s *Store) RecordDelivery(ctx context.Context, d board.Delivery) (board.DeliveryResult, error) {
	var first board.RequestID
	at := d.ReceivedAt.Truncate(time.Microsecond)
	err := s.pool.QueryRow(ctx, insertDelivery, d.Hook, d.ID, d.RequestID, at).Scan(&first)
	if err == nil {
		return board.DeliveryResult{RequestID: first, IsNew: true, Own: true}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return board.DeliveryResult{}, fmt.Errorf("record delivery %s/%s: %w", d.Hook, d.ID, err)
	}
	var firstAt *time.Time
	if err := s.pool.QueryRow(ctx, selectDelivery, d.Hook, d.ID).Scan(&first, &firstAt); err != nil {
		return board.DeliveryResult{}, fmt.Errorf("read delivery %s/%s: %w", d.Hook, d.ID, err)
	}
	own := first == d.RequestID && (firstAt == nil || firstAt.Equal(at))
	return board.DeliveryResult{RequestID: first, Own: own}, nil
}
