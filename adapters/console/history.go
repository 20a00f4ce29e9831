package console

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bobnet/bobnet/board"
)

// History keeps console channels' events across restarts; *store.Store is
// one. A channel's past is read from it the first time the channel is used
// after a start.
type History interface {
	AppendConsoleEvent(ctx context.Context, channel string, ev board.ConsoleEvent, keep int) error
	ConsoleEvents(ctx context.Context, channel string, limit int) ([]board.ConsoleEvent, error)
	ConsoleChannels(ctx context.Context) ([]board.ChannelActivity, error)
}

// historyTimeout bounds one read or write of the history: the console's
// own memory answers meanwhile, and a slow database must not hold up a
// reply on its way to a browser.
const historyTimeout = 2 * time.Second

// load fills a channel not yet in memory from the history; c.mu is not
// held. A history that cannot be read leaves the channel to start afresh,
// numbering its events past any the history may hold.
func (c *Console) load(name string) {
	if c.history == nil {
		return
	}
	c.mu.Lock()
	_, ok := c.channels[name]
	c.mu.Unlock()
	if ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), historyTimeout)
	defer cancel()
	evs, err := c.history.ConsoleEvents(ctx, name, historySize)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.channels[name]; ok {
		return // loaded meanwhile
	}
	ch := c.channel(name)
	if err != nil {
		c.logger.Warn("console history unavailable; the channel starts empty", "channel", name, "err", err)
		ch.nextID = time.Now().UnixMilli()
		return
	}
	for _, e := range evs {
		ch.history = append(ch.history, Event{ID: e.ID, Type: e.Type, At: e.At.UTC().Format(time.RFC3339), Data: e.Data})
	}
	if n := len(evs); n > 0 {
		ch.nextID = evs[n-1].ID + 1
	}
}

// keep writes one event to the history.
func (c *Console) keep(name string, ev Event) {
	if c.history == nil {
		return
	}
	data, err := json.Marshal(ev.Data)
	if err != nil {
		c.logger.Error("console event not kept", "channel", name, "err", err)
		return
	}
	at, _ := time.Parse(time.RFC3339, ev.At)
	ctx, cancel := context.WithTimeout(context.Background(), historyTimeout)
	defer cancel()
	if err := c.history.AppendConsoleEvent(ctx, name, board.ConsoleEvent{ID: ev.ID, Type: ev.Type, At: at, Data: data}, historySize); err != nil {
		c.logger.Warn("console event not kept; it is lost at the next restart", "channel", name, "event", ev.ID, "err", err)
	}
}
