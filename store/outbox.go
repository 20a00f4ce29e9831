package store

import (
	"context"
	"fmt"

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
