package board

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ConsoleEvent is one thing shown in a web console channel, as the console
// numbered it.
type ConsoleEvent struct {
	ID   int64
	Type string
	At   time.Time
	Data json.RawMessage
}

// ChannelActivity is a console channel with its latest event.
type ChannelActivity struct {
	Channel string
	Events  int
	Latest  time.Time
	// LastType is the latest event's type (message, reply, proposal, …).
	LastType string
}

const (
	insertConsoleEvent = `INSERT INTO console_events (channel, id, type, at, data) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (channel, id) DO NOTHING`
	trimConsoleEvents   = `DELETE FROM console_events WHERE channel = $1 AND id <= $2`
	selectConsoleEvents = `SELECT id, type, at, data FROM (
    SELECT id, type, at, data FROM console_events WHERE channel = $1 ORDER BY id DESC LIMIT $2) newest ORDER BY id`
	selectConsoleChannels = `SELECT channel, events, at, type FROM (
    SELECT DISTINCT ON (channel) channel, count(*) OVER (PARTITION BY channel) AS events, at, type
    FROM console_events ORDER BY channel, id DESC) latest ORDER BY at DESC, channel`
)

// AppendConsoleEvent keeps one console event and deletes the channel's
// events older than the newest keep. Writing an event twice keeps the first.
func (s *Store) AppendConsoleEvent(ctx context.Context, channel string, ev ConsoleEvent, keep int) error {
	batch := &pgx.Batch{}
	batch.Queue(insertConsoleEvent, channel, ev.ID, ev.Type, ev.At, ev.Data)
	batch.Queue(trimConsoleEvents, channel, ev.ID-int64(keep))
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("console event %s/%d: %w", channel, ev.ID, err)
	}
	return nil
}

// ConsoleEvents returns a channel's newest events, at most limit, oldest
// first; none for a channel never written to.
func (s *Store) ConsoleEvents(ctx context.Context, channel string, limit int) ([]ConsoleEvent, error) {
	rows, _ := s.pool.Query(ctx, selectConsoleEvents, channel, limit)
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ConsoleEvent, error) {
		var ev ConsoleEvent
		err := r.Scan(&ev.ID, &ev.Type, &ev.At, &ev.Data)
		return ev, err
	})
	if err != nil {
		return nil, fmt.Errorf("console events of %s: %w", channel, err)
	}
	return evs, nil
}

// ConsoleChannels returns every console channel with its latest event,
// the most recently active first.
func (s *Store) ConsoleChannels(ctx context.Context) ([]ChannelActivity, error) {
	rows, _ := s.pool.Query(ctx, selectConsoleChannels)
	chs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ChannelActivity, error) {
		var c ChannelActivity
		err := r.Scan(&c.Channel, &c.Events, &c.Latest, &c.LastType)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("console channels: %w", err)
	}
	return chs, nil
}
