package store

import (
	"context"
	"fmt"
	"time"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// insertOutboundEvents writes events' rows in one statement, in order,
// so an endpoint hears them as they were made.
const insertOutboundEvents = `INSERT INTO event_outbox (msg_id, event_type, endpoint, body)
SELECT u.msg_id, u.event_type, u.endpoint, u.body
FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[]) WITH ORDINALITY AS u(msg_id, event_type, endpoint, body, ord)
ORDER BY u.ord
ON CONFLICT (msg_id, endpoint) DO NOTHING`

const (
	// claimDue leases the oldest undelivered row of each endpoint that is
	// due, so one endpoint hears its events in order and two senders
	// never send the same row at once.
	claimDue = `UPDATE event_outbox SET next_attempt_at = now() + $2 * interval '1 millisecond'
WHERE id IN (
    SELECT o.id FROM event_outbox o
    WHERE o.delivered_at IS NULL AND o.failed_at IS NULL AND o.next_attempt_at <= now()
      AND NOT EXISTS (SELECT 1 FROM event_outbox e WHERE e.endpoint = o.endpoint AND e.id < o.id
                      AND e.delivered_at IS NULL AND e.failed_at IS NULL)
    ORDER BY o.id LIMIT $1
    FOR UPDATE SKIP LOCKED)
RETURNING id, msg_id, event_type, endpoint, body, attempts,
    EXISTS (SELECT 1 FROM callback_endpoints_disabled d WHERE d.endpoint = event_outbox.endpoint)`

	markDelivered = `UPDATE event_outbox SET delivered_at = now(), attempts = attempts + 1, last_error = '' WHERE id = $1`
	markRetry     = `UPDATE event_outbox SET attempts = attempts + 1, last_error = $2,
next_attempt_at = now() + $3 * interval '1 millisecond' WHERE id = $1`
	markFailed = `UPDATE event_outbox SET attempts = attempts + 1, last_error = $2, failed_at = now() WHERE id = $1`
	// releaseClaim gives back a row whose POST a shutdown aborted: due
	// now, for another sender or the next start, with no attempt counted.
	releaseClaim = `UPDATE event_outbox SET next_attempt_at = now() WHERE id = $1 AND delivered_at IS NULL AND failed_at IS NULL`
	// markSkipped gives up a row of a disabled endpoint without sending it.
	markSkipped = `UPDATE event_outbox SET last_error = $2, failed_at = now() WHERE id = $1`

	// disableEndpoint records an endpoint's 410 Gone and gives up its
	// other pending rows: the receiver said it will never take them.
	disableEndpoint = `WITH d AS (
    INSERT INTO callback_endpoints_disabled (endpoint, reason) VALUES ($1, $2)
    ON CONFLICT (endpoint) DO UPDATE SET disabled_at = now(), reason = excluded.reason)
UPDATE event_outbox SET last_error = 'not sent: the endpoint answered 410 Gone and is disabled', failed_at = now()
WHERE endpoint = $1 AND id <> $3 AND delivered_at IS NULL AND failed_at IS NULL`

	pruneEvents = `DELETE FROM event_outbox
WHERE (delivered_at IS NOT NULL AND delivered_at < now() - $1 * interval '1 millisecond')
   OR (failed_at IS NOT NULL AND failed_at < now() - $1 * interval '1 millisecond')`

	selectOutboxCounts = `SELECT count(*) FILTER (WHERE delivered_at IS NULL AND failed_at IS NULL),
count(*) FILTER (WHERE delivered_at IS NOT NULL), count(*) FILTER (WHERE failed_at IS NOT NULL) FROM event_outbox`
)

// eventColumns turns events into insertOutboundEvents' arguments; ok is
// false when there is no row to write.
func eventColumns(evs []board.OutboundEvent) (args []any, ok bool) {
	var ids, types, endpoints []string
	var bodies [][]byte
	for _, ev := range evs {
		for _, ep := range ev.Endpoints {
			ids, types, endpoints, bodies = append(ids, ev.MsgID), append(types, ev.Type), append(endpoints, ep), append(bodies, ev.Body)
		}
	}
	return []any{ids, types, endpoints, bodies}, len(ids) > 0
}

// queueEvents queues the rows of evs in a batch, so they commit with what
// the batch decides.
func queueEvents(b *pgx.Batch, evs []board.OutboundEvent) {
	if args, ok := eventColumns(evs); ok {
		b.Queue(insertOutboundEvents, args...)
	}
}

// Execer runs a statement; a pool, a connection and a transaction are one.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// InsertEvents writes events to the outbox on db, outside any decision:
// the events of changes that are not decided in a transaction of their
// own here.
func InsertEvents(ctx context.Context, db Execer, evs []board.OutboundEvent) error {
	args, ok := eventColumns(evs)
	if !ok {
		return nil
	}
	if _, err := db.Exec(ctx, insertOutboundEvents, args...); err != nil {
		return fmt.Errorf("store outbound events: %w", err)
	}
	return nil
}

// InsertEvents writes events to the outbox, outside any decision.
func (s *Store) InsertEvents(ctx context.Context, evs []board.OutboundEvent) error {
	return InsertEvents(ctx, s.pool, evs)
}

// ClaimEvents leases up to limit due rows for lease, the oldest pending
// row of each endpoint, so an endpoint hears its events in order and no
// other sender takes a row while its lease runs. A row whose endpoint is
// disabled comes back marked so, to be given up unsent.
func (s *Store) ClaimEvents(ctx context.Context, limit int, lease time.Duration) ([]board.ClaimedEvent, error) {
	rows, err := s.pool.Query(ctx, claimDue, limit, lease.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("claim due events: %w", err)
	}
	due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (board.ClaimedEvent, error) {
		var x board.ClaimedEvent
		err := r.Scan(&x.ID, &x.MsgID, &x.Type, &x.Endpoint, &x.Body, &x.Attempts, &x.Disabled)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim due events: %w", err)
	}
	return due, nil
}

// execOutbox runs one statement on the outbox, saying what it did on failure.
func (s *Store) execOutbox(ctx context.Context, what, sql string, args ...any) error {
	if _, err := s.pool.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// MarkEventDelivered records a row's successful attempt.
func (s *Store) MarkEventDelivered(ctx context.Context, id int64) error {
	return s.execOutbox(ctx, "mark delivered", markDelivered, id)
}

// RetryEvent records a failed attempt, why (lastErr), and that the row is
// due again after wait.
func (s *Store) RetryEvent(ctx context.Context, id int64, lastErr string, wait time.Duration) error {
	return s.execOutbox(ctx, "schedule retry", markRetry, id, lastErr, wait.Milliseconds())
}

// FailEvent records a last failed attempt and gives the row up.
func (s *Store) FailEvent(ctx context.Context, id int64, lastErr string) error {
	return s.execOutbox(ctx, "mark failed", markFailed, id, lastErr)
}

// SkipEvent gives a row up unsent, counting no attempt: its endpoint is
// disabled.
func (s *Store) SkipEvent(ctx context.Context, id int64, reason string) error {
	return s.execOutbox(ctx, "give up an event", markSkipped, id, reason)
}

// ReleaseEvent gives back a claimed row whose attempt was aborted: it is
// due at once, and no attempt is counted.
func (s *Store) ReleaseEvent(ctx context.Context, id int64) error {
	return s.execOutbox(ctx, "give back an event", releaseClaim, id)
}

// DisableEndpoint records that endpoint answered 410 Gone (why: reason)
// and gives up its pending rows other than sent, the row that was
// answered so: nothing is sent to it again.
func (s *Store) DisableEndpoint(ctx context.Context, endpoint, reason string, sent int64) error {
	return s.execOutbox(ctx, "disable endpoint", disableEndpoint, endpoint, reason, sent)
}

// PruneEvents deletes delivered and given-up rows older than keep and
// returns how many.
func (s *Store) PruneEvents(ctx context.Context, keep time.Duration) (int64, error) {
	tag, err := s.pool.Exec(ctx, pruneEvents, keep.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("prune outbox: %w", err)
	}
	return tag.RowsAffected(), nil
}

// OutboxCounts returns how many rows are pending, delivered and given up.
func (s *Store) OutboxCounts(ctx context.Context) (board.OutboxCounts, error) {
	var c board.OutboxCounts
	if err := s.pool.QueryRow(ctx, selectOutboxCounts).Scan(&c.Pending, &c.Delivered, &c.Failed); err != nil {
		return c, fmt.Errorf("outbox status: %w", err)
	}
	return c, nil
}
