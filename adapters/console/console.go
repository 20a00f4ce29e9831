// Package console is BobNet's own surface: the channels a browser talks
// to the bot in (their events, kept and streamed), the engine's poster for
// them, and the web console's pages. The REST API over the channels is in
// httpapi.
package console

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/sse"
	"github.com/bobnet/bobnet/web"
)

// Engine is what the console's pages need from the bot engine.
type Engine interface {
	Proposal(ctx context.Context, id board.ProposalID) (board.Proposal, error)
}

//go:embed static
var static embed.FS

// historySize is how many events a channel keeps for a page reload.
const historySize = 200

// Console keeps the console channels and serves the web console's pages,
// and is the engine's poster for console channels.
type Console struct {
	eng    Engine
	logger *slog.Logger

	mu       sync.Mutex
	channels map[string]*channel

	history History // nil: the channels are remembered until the process stops
}

// New returns a console whose pages read proposals from eng; history, when
// not nil, keeps the channels' events across restarts (history.go).
func New(eng Engine, history History, logger *slog.Logger) *Console {
	return &Console{eng: eng, history: history, logger: logger, channels: map[string]*channel{}}
}

// maxChannels is how many channels keep history; past it the least
// recently used channel nobody watches is dropped. The API trusts its
// callers' channel names, so the cap is what bounds the memory.
const maxChannels = 1000

// Event is one thing shown in a channel: its type is message, working,
// reply, proposal, proposal_updated, draft or run_progress.
type Event = sse.Event

// channel is one channel's history and subscribers.
type channel struct {
	nextID   int64
	history  []Event
	subs     map[chan Event]struct{}
	lastUsed time.Time
	// live holds the latest draft of each request not yet answered and
	// the latest progress of each run, by "draft:<request>" and
	// "run:<run>" (showing.go); they are not history.
	live map[string]Event
}

// channel returns a channel's state, creating it (and dropping the least
// recently used unwatched channel when there are too many); c.mu is held.
func (c *Console) channel(name string) *channel {
	ch, ok := c.channels[name]
	if !ok {
		if len(c.channels) >= maxChannels {
			c.dropIdleChannel()
		}
		ch = &channel{nextID: 1, subs: map[chan Event]struct{}{}}
		c.channels[name] = ch
	}
	ch.lastUsed = time.Now()
	return ch
}

// dropIdleChannel forgets the least recently used channel nobody is
// watching; c.mu is held. Its history goes (a browser that reconnects
// later starts afresh); its proposals and boards are elsewhere and stay.
func (c *Console) dropIdleChannel() {
	oldest := ""
	for name, ch := range c.channels {
		if len(ch.subs) == 0 && (oldest == "" || ch.lastUsed.Before(c.channels[oldest].lastUsed)) {
			oldest = name
		}
	}
	if oldest != "" {
		delete(c.channels, oldest)
	}
}

// Publish adds an event to a channel and hands it to every subscriber. A
// subscriber too slow to keep up is dropped (its browser reconnects and
// resumes from Last-Event-ID), so the engine never waits on a browser.
func (c *Console) Publish(name, typ string, data any) {
	c.load(name)
	ev := c.append(name, typ, data)
	c.keep(name, ev)
}

// append adds an event to a channel in memory and hands it to the
// channel's subscribers.
func (c *Console) append(name, typ string, data any) Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.channel(name)
	ev := c.emit(ch, typ, data)
	ch.history = append(ch.history, ev)
	if len(ch.history) > historySize {
		ch.history = ch.history[len(ch.history)-historySize:]
	}
	return ev
}

// emit numbers an event and hands it to ch's subscribers; c.mu is held.
func (c *Console) emit(ch *channel, typ string, data any) Event {
	ev := Event{ID: ch.nextID, Type: typ, At: time.Now().UTC().Format(time.RFC3339), Data: data}
	ch.nextID++
	for sub := range ch.subs {
		select {
		case sub <- ev:
		default:
			delete(ch.subs, sub)
			close(sub)
		}
	}
	return ev
}

// subscribe returns the events after lastID and a channel of new ones.
func (c *Console) subscribe(name string, lastID int64) ([]Event, chan Event) {
	c.load(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.channel(name)
	var past []Event
	for _, ev := range ch.history {
		if ev.ID > lastID {
			past = append(past, ev)
		}
	}
	if live := ch.liveAfter(lastID); len(live) > 0 {
		past = append(past, live...)
		sort.Slice(past, func(i, j int) bool { return past[i].ID < past[j].ID })
	}
	sub := make(chan Event, 64)
	ch.subs[sub] = struct{}{}
	return past, sub
}

// Follow returns a channel's events after lastID and a subscription to
// the new ones, which stop ends. The subscription is closed when its
// reader falls behind: a browser then reconnects from Last-Event-ID.
func (c *Console) Follow(name string, lastID int64) (past []Event, live <-chan Event, stop func()) {
	past, sub := c.subscribe(name, lastID)
	return past, sub, func() { c.unsubscribe(name, sub) }
}

// Channels lists the channels that have events, the most recently active
// first: from the history when there is one, else from memory.
func (c *Console) Channels(ctx context.Context) ([]board.ChannelActivity, error) {
	if c.history != nil {
		return c.history.ConsoleChannels(ctx)
	}
	c.mu.Lock()
	var out []board.ChannelActivity
	for name, ch := range c.channels {
		if n := len(ch.history); n > 0 {
			at, _ := time.Parse(time.RFC3339, ch.history[n-1].At)
			out = append(out, board.ChannelActivity{Channel: name, Events: n, Latest: at, LastType: ch.history[n-1].Type})
		}
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Latest.After(out[j].Latest) })
	return out, nil
}

func (c *Console) unsubscribe(name string, sub chan Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.channels[name] // never created by leaving
	if !ok {
		return
	}
	if _, ok := ch.subs[sub]; ok {
		delete(ch.subs, sub)
		close(sub)
	}
}

// Reply shows a bot reply in the channel, in place of the draft of the
// request it answers.
func (c *Console) Reply(_ context.Context, t board.Thread, r board.Reply) error {
	c.answered(t.Channel.ID, r.Request)
	c.Publish(t.Channel.ID, "reply", r)
	return nil
}

// PostPreview shows a proposal's preview in the channel, in place of the
// draft of the request it answers.
func (c *Console) PostPreview(_ context.Context, p board.Proposal) (board.MessageRef, error) {
	c.answered(p.Thread.Channel.ID, p.RequestID)
	c.Publish(p.Thread.Channel.ID, "proposal", proposalEvent{ProposalView: httpapi.ViewProposal(p), RequestID: p.RequestID})
	return board.MessageRef(p.ID), nil
}

// UpdatePreview shows that a proposal's state changed.
func (c *Console) UpdatePreview(_ context.Context, p board.Proposal) error {
	c.Publish(p.Thread.Channel.ID, "proposal_updated", httpapi.ViewProposal(p))
	return nil
}

// PageRoutes mounts the web console at / and /c/{channel}, and web's
// proposal page at /proposals/{id} on the engine's proposals.
func (c *Console) PageRoutes(r chi.Router) {
	sub, _ := fs.Sub(static, "static")
	files := http.FileServerFS(sub)
	index := func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, sub, "index.html")
	}
	r.Get("/", web.SecurityHeaders(http.HandlerFunc(index)).ServeHTTP)
	r.Get("/c/{channel}", web.SecurityHeaders(http.HandlerFunc(index)).ServeHTTP)
	r.Get("/proposals/{id}", web.SecurityHeaders(web.ProposalPage(proposalViews{c.eng}, c.logger)).ServeHTTP)
	// The files under /static/ include the console's HTML itself, which
	// must not be framed from that address either.
	r.Handle("/static/*", web.SecurityHeaders(http.StripPrefix("/static/", files)))
}
