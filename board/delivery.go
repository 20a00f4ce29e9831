package board

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
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

// Delivery is one webhook delivery to record: the hook, the sender's
// delivery id, and the request id it would start.
type Delivery struct {
	Hook      string
	ID        string
	RequestID RequestID
}

// DeliveryResult is what recording a delivery found: the request id of the
// delivery's first recording, and whether this was it.
type DeliveryResult struct {
	RequestID RequestID
	IsNew     bool
}

// insertDeliveries records many deliveries in one statement. Of several
// copies in one batch the first wins; rows already there are left alone.
const insertDeliveries = `WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS t(hook, delivery_id, request_id, ord)
), ins AS (
    INSERT INTO webhook_deliveries (hook, delivery_id, request_id)
    SELECT DISTINCT ON (hook, delivery_id) hook, delivery_id, request_id FROM input ORDER BY hook, delivery_id, ord
    ON CONFLICT (hook, delivery_id) DO NOTHING
    RETURNING hook, delivery_id, request_id
)
SELECT coalesce(ins.request_id, '') FROM input LEFT JOIN ins USING (hook, delivery_id) ORDER BY input.ord`

// selectDeliveries reads rows that were there before a batch: a separate
// statement, so it also sees rows that concurrent batches committed while
// the insert waited for them.
const selectDeliveries = `SELECT d.hook, d.delivery_id, d.request_id FROM webhook_deliveries d
JOIN unnest($1::text[], $2::text[]) AS t(hook, delivery_id) USING (hook, delivery_id)`

// RecordDeliveries remembers webhook deliveries in one round
// trip (two when some were seen before), so that a burst of webhooks
// costs Postgres one statement instead of one each. Results are in the
// order of ds.
func (s *Store) RecordDeliveries(ctx context.Context, ds []Delivery) ([]DeliveryResult, error) {
	hooks, ids, reqs := make([]string, len(ds)), make([]string, len(ds)), make([]string, len(ds))
	for i, d := range ds {
		hooks[i], ids[i], reqs[i] = d.Hook, d.ID, string(d.RequestID)
	}
	rows, err := s.pool.Query(ctx, insertDeliveries, hooks, ids, reqs)
	if err != nil {
		return nil, fmt.Errorf("record %d deliveries: %w", len(ds), err)
	}
	firsts, err := pgx.CollectRows(rows, pgx.RowTo[RequestID])
	if err != nil {
		return nil, fmt.Errorf("record %d deliveries: %w", len(ds), err)
	}
	out := make([]DeliveryResult, len(ds))
	var oldHooks, oldIDs []string
	for i, first := range firsts {
		if first == "" {
			oldHooks, oldIDs = append(oldHooks, ds[i].Hook), append(oldIDs, ds[i].ID)
			continue
		}
		out[i] = DeliveryResult{RequestID: first, IsNew: first == ds[i].RequestID}
	}
	if len(oldHooks) == 0 {
		return out, nil
	}
	rows, err = s.pool.Query(ctx, selectDeliveries, oldHooks, oldIDs)
	if err != nil {
		return nil, fmt.Errorf("read earlier deliveries: %w", err)
	}
	seen := map[[2]string]RequestID{}
	var hook, id string
	var req RequestID
	if _, err := pgx.ForEachRow(rows, []any{&hook, &id, &req}, func() error {
		seen[[2]string{hook, id}] = req
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read earlier deliveries: %w", err)
	}
	for i, first := range firsts {
		if first != "" {
			continue
		}
		req, ok := seen[[2]string{ds[i].Hook, ds[i].ID}]
		if !ok {
			// Recorded and forgotten again while we waited: a failed
			// submit gave it back, so the sender's next try is new.
			return nil, fmt.Errorf("delivery %s/%s vanished while being recorded: %w", ds[i].Hook, ds[i].ID, ErrNotFound)
		}
		out[i] = DeliveryResult{RequestID: req}
	}
	return out, nil
}
