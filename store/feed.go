package store

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/bobnet/bobnet/board"
)

// Feed carries card changes from Postgres notifications to subscribers of
// a board. Every process runs its own, so a change made on one replica
// reaches viewers connected to another.
type Feed struct {
	store  *Store
	logger *slog.Logger

	mu   sync.Mutex
	subs map[board.ID]map[chan board.CardEvent]struct{}
	// ready is closed once the feed listens, so a test (or a caller that
	// must not miss the first change) can wait for it.
	ready chan struct{}
	once  sync.Once
	// listened is set once the feed first listens (Run's goroutine
	// alone reads and writes it).
	listened bool
}

// NewFeed returns a feed on store's database; it delivers nothing until
// Run.
func NewFeed(store *Store, logger *slog.Logger) *Feed {
	return &Feed{store: store, logger: logger, subs: map[board.ID]map[chan board.CardEvent]struct{}{}, ready: make(chan struct{})}
}

// Ready is closed once the feed first listens.
func (f *Feed) Ready() <-chan struct{} { return f.ready }

// Run listens for card changes until ctx ends, reconnecting after a lost
// connection (a Postgres restart or failover: a multi-host DATABASE_URL
// reconnects to the promoted primary). A change made while it was
// disconnected is not replayed; instead, once it listens again, every
// subscription open then is ended, so each viewer reconnects and reloads
// the board as it is now and misses nothing.
func (f *Feed) Run(ctx context.Context) error {
	for {
		err := f.listen(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		f.logger.Warn("card change feed lost its connection; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func (f *Feed) listen(ctx context.Context) error {
	conn, err := f.store.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	// The connection is left in LISTEN state: hijack it so it is closed
	// rather than returned to the pool.
	pc := conn.Hijack()
	defer pc.Close(context.WithoutCancel(ctx))
	if _, err := pc.Exec(ctx, "LISTEN "+changesChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if f.listened {
		f.endAll()
	}
	f.listened = true
	f.once.Do(func() { close(f.ready) })
	for {
		n, err := pc.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait: %w", err)
		}
		var note notice
		if err := json.Unmarshal([]byte(n.Payload), &note); err != nil {
			continue
		}
		if !f.watched(note.Board) {
			continue
		}
		ev, err := f.event(ctx, note)
		if err != nil {
			f.logger.Warn("read card change", "board", note.Board, "card", note.Card, "err", err)
			continue
		}
		f.publish(ev)
	}
}

const selectAuditByID = `SELECT actor, at, detail FROM audit_events WHERE id = $1`

// event reads what a notification names.
func (f *Feed) event(ctx context.Context, note notice) (board.CardEvent, error) {
	c, err := f.store.Card(ctx, note.Card)
	if err != nil {
		return board.CardEvent{}, err
	}
	ev := board.CardEvent{Board: note.Board, Card: c, AuditID: note.Audit, Changes: []board.FieldChange{}}
	var detail []byte
	if err := f.store.pool.QueryRow(ctx, selectAuditByID, note.Audit).Scan(&ev.Actor, &ev.At, &detail); err != nil {
		return board.CardEvent{}, fmt.Errorf("audit event %d: %w", note.Audit, err)
	}
	var d struct {
		Via     string              `json:"via"`
		Changes []board.FieldChange `json:"changes"`
	}
	_ = json.Unmarshal(detail, &d)
	ev.Via = d.Via
	if d.Changes != nil {
		ev.Changes = d.Changes
	}
	return ev, nil
}

func (f *Feed) watched(id board.ID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs[id]) > 0
}

// publish hands an event to the board's subscribers. One too slow to keep
// up is dropped (its stream ends and the viewer reconnects), so a stalled
// browser never holds the feed.
func (f *Feed) publish(ev board.CardEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for sub := range f.subs[ev.Board] {
		select {
		case sub <- ev:
		default:
			delete(f.subs[ev.Board], sub)
			close(sub)
		}
	}
}

// endAll ends every subscription: their viewers reconnect and reload.
func (f *Feed) endAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, subs := range f.subs {
		for sub := range subs {
			close(sub)
		}
		delete(f.subs, id)
	}
}

// Subscribe returns the changes of a board from now on and a function that
// ends the subscription. The channel is closed when the subscriber falls
// too far behind, when the feed listens again after losing its connection
// (Run), or when cancel is called.
func (f *Feed) Subscribe(id board.ID) (<-chan board.CardEvent, func()) {
	sub := make(chan board.CardEvent, 64)
	f.mu.Lock()
	if f.subs[id] == nil {
		f.subs[id] = map[chan board.CardEvent]struct{}{}
	}
	f.subs[id][sub] = struct{}{}
	f.mu.Unlock()
	return sub, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.subs[id][sub]; ok {
			delete(f.subs[id], sub)
			close(sub)
			if len(f.subs[id]) == 0 {
				delete(f.subs, id)
			}
		}
	}
}
