package board

import (
	"context"
	"fmt"
)

const deleteDelivery = `DELETE FROM webhook_deliveries WHERE hook = $1 AND delivery_id = $2`

// ForgetDelivery removes a recorded webhook delivery, for one whose request
// could not be queued: the sender's retry must then be taken as new.
func (s *Store) ForgetDelivery(ctx context.Context, hook, deliveryID string) error {
	if _, err := s.pool.Exec(ctx, deleteDelivery, hook, deliveryID); err != nil {
		return fmt.Errorf("forget delivery %s/%s: %w", hook, deliveryID, err)
	}
	return nil
}
