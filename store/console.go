package store

import (
	"context"
	"fmt"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

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
func (s *Store) AppendConsoleEvent(ctx context.Context, channel string, ev board.ConsoleEvent, keep int) error {
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
func (s *Store) ConsoleEvents(ctx context.Context, channel string, limit int) ([]board.ConsoleEvent, error) {
	rows, _ := s.pool.Query(ctx, selectConsoleEvents, channel, limit)
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (board.ConsoleEvent, error) {
		var ev board.ConsoleEvent
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
func (s *Store) ConsoleChannels(ctx context.Context) ([]board.ChannelActivity, error) {
	rows, _ := s.pool.Query(ctx, selectConsoleChannels)
	chs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (board.ChannelActivity, error) {
		var c board.ChannelActivity
		err := r.Scan(&c.Channel, &c.Events, &c.Latest, &c.LastType)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("console channels: %w", err)
	}
	return chs, nil
}
