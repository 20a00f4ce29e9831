// Package outbox tells other tools what happened: the engine's events are
// written to a Postgres outbox, one row per callback URL (an approval's in
// the approval's own transaction, through Encode), and POSTed signed as
// Standard Webhooks with retries and exponential backoff. Rows survive
// restarts, so every event is delivered at least once, each with a
// webhook-id that stays the same across retries. Callbacks reach only
// allow-listed hosts, and never loopback or private addresses unless those
// ranges are allowed too.
package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// DefaultTimeout is how long one attempt may take: Standard Webhooks asks
// senders to wait 15 to 30 seconds for an answer.
const DefaultTimeout = 20 * time.Second

// ErrBlockedAddress means a callback resolved to an address callbacks may
// not reach.
var ErrBlockedAddress = errors.New("callback address is loopback, private or link-local and not in outbound.allow_private")

// Endpoint is one callback URL and the secret its events are signed with.
type Endpoint struct {
	URL    string
	Secret string
}

// Config is where events go and how hard the outbox tries.
type Config struct {
	// Routes are the callbacks of each channel, by channel key.
	Routes map[string][]Endpoint
	// Hooks are the callbacks of each hook by its name: a card dispatched
	// to runner hook:<name> goes to these, not to its channel's.
	Hooks map[string][]Endpoint
	// CardTokenKeys are each hook's key for the tokens of the cards
	// dispatched to it: a card.dispatched row holds a placeholder, and the
	// token is made from the key as the row is sent (board.ExpandRunTokens),
	// so the outbox never stores it.
	CardTokenKeys map[string][]byte
	// AllowHosts are the hosts callbacks may name.
	AllowHosts []string
	// AllowPrivate are loopback or private ranges callbacks may reach.
	AllowPrivate []netip.Prefix
	PollInterval time.Duration // default 2s; an Emit wakes the sender at once
	RetryBase    time.Duration // default 5s, doubled per failed attempt
	RetryMax     time.Duration // default 1h
	MaxAttempts  int           // default 20, about a day; then the row is marked failed
	Timeout      time.Duration // per attempt, default 20s (the specification asks for 15 to 30)
	Lease        time.Duration // how long a sender owns a row it is sending, default 1m
	Keep         time.Duration // how long delivered and failed rows are kept, default 7 days
}

// Queue is the outbox table: events written outside any decision, rows
// claimed under a lease, and how each attempt went. *store.Store is one
// (store/outbox.go holds the SQL); this package decides what is sent,
// when, and what an answer means.
type Queue interface {
	// InsertEvents writes events' rows, one per endpoint.
	InsertEvents(ctx context.Context, evs []board.OutboundEvent) error
	// ClaimEvents leases up to limit due rows for lease, the oldest
	// pending row of each endpoint.
	ClaimEvents(ctx context.Context, limit int, lease time.Duration) ([]board.ClaimedEvent, error)
	// MarkEventDelivered records a successful attempt.
	MarkEventDelivered(ctx context.Context, id int64) error
	// RetryEvent records a failed attempt; the row is due again after
	// wait.
	RetryEvent(ctx context.Context, id int64, lastErr string, wait time.Duration) error
	// FailEvent records a last failed attempt and gives the row up.
	FailEvent(ctx context.Context, id int64, lastErr string) error
	// SkipEvent gives a row of a disabled endpoint up unsent.
	SkipEvent(ctx context.Context, id int64, reason string) error
	// ReleaseEvent makes a claimed row due again, counting no attempt.
	ReleaseEvent(ctx context.Context, id int64) error
	// DisableEndpoint records an endpoint's 410 Gone and gives up its
	// pending rows but sent.
	DisableEndpoint(ctx context.Context, endpoint, reason string, sent int64) error
	// PruneEvents deletes rows done with for longer than keep.
	PruneEvents(ctx context.Context, keep time.Duration) (int64, error)
	// OutboxCounts counts the rows by state.
	OutboxCounts(ctx context.Context) (board.OutboxCounts, error)
}

// Outbox stores and sends events; it is the engine's bot.EventSink.
type Outbox struct {
	cfg     Config
	queue   Queue
	logger  *slog.Logger
	client  *http.Client
	secrets map[string]string
	wake    chan struct{}
}

// New returns an outbox that keeps its rows in queue. Nothing is sent
// until Run.
func New(cfg Config, queue Queue, logger *slog.Logger) *Outbox {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 2 * time.Second
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 5 * time.Second
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = time.Hour
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	// A lease shorter than an attempt would let another sender take a row
	// whose POST is still under way.
	cfg.Lease = max(cfg.Lease, 2*cfg.Timeout)
	if cfg.Keep <= 0 {
		cfg.Keep = 7 * 24 * time.Hour
	}
	o := &Outbox{cfg: cfg, queue: queue, logger: logger, secrets: map[string]string{}, wake: make(chan struct{}, 1)}
	for _, routes := range []map[string][]Endpoint{cfg.Routes, cfg.Hooks} {
		for _, eps := range routes {
			for _, ep := range eps {
				o.secrets[ep.URL] = ep.Secret
			}
		}
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: o.control}
	o.client = &http.Client{
		Timeout:   cfg.Timeout,
		Transport: &http.Transport{DialContext: dialer.DialContext, Proxy: nil, MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute},
		// A redirect could lead anywhere; the receiver must answer itself.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return o
}

// control refuses connections to addresses callbacks may not reach. It
// runs after name resolution, so a host name pointing at 127.0.0.1 is
// caught too.
func (o *Outbox) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrBlockedAddress, address)
	}
	ip = ip.Unmap()
	if !Private(ip) {
		return nil
	}
	for _, p := range o.cfg.AllowPrivate {
		if p.Contains(ip) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrBlockedAddress, ip)
}

// cgnat is the shared address space of carrier-grade NAT (RFC 6598).
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// Private says whether ip is loopback, private, link-local, unspecified,
// multicast or carrier-grade NAT: addresses inside someone's network.
func Private(ip netip.Addr) bool {
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() || cgnat.Contains(ip)
}

// Payload is the JSON body of an outbound event, in the Standard Webhooks
// shape: type, timestamp, data.
type Payload struct {
	Type      bot.EventType `json:"type"`
	Timestamp time.Time     `json:"timestamp"`
	Data      Data          `json:"data"`
}

// Data is what an event says about its proposal and board. A
// card.changed event is about no proposal, so it leaves the proposal's
// fields out rather than sending them empty.
type Data struct {
	ProposalID  board.ProposalID    `json:"proposal_id,omitempty"`
	State       board.ProposalState `json:"state,omitempty"`
	Version     int                 `json:"version,omitempty"`
	Channel     string              `json:"channel"`
	RequestID   board.RequestID     `json:"request_id,omitempty"`
	RequestedBy string              `json:"requested_by,omitempty"`
	Request     string              `json:"request,omitempty"`
	Actor       string              `json:"actor,omitempty"`
	BoardName   string              `json:"board_name,omitempty"`
	Cards       int                 `json:"cards,omitempty"`
	Links       int                 `json:"links,omitempty"`
	ExpiresAt   time.Time           `json:"expires_at,omitzero"`
	BoardID     string              `json:"board_id,omitempty"`
	BoardURL    string              `json:"board_url,omitempty"`
	// Reason is why a cancelled proposal was cancelled, as its canceller
	// wrote it (at most bot.MaxCancelReason characters).
	Reason string `json:"reason,omitempty"`
	// Card is set on card.changed: the card as it is now and what changed.
	Card *CardData `json:"card,omitempty"`
	// Run is set on run.started and run.finished.
	Run *RunData `json:"run,omitempty"`
}

// RunData is a run event's run.
type RunData struct {
	ID      string `json:"id"`
	Number  int    `json:"number"`
	State   string `json:"state"`
	Trigger string `json:"trigger"`
	Reason  string `json:"reason,omitempty"`
	Cards   int    `json:"cards"`
	URL     string `json:"url"`
}

// CardData is a card.changed event's card: its handle, title and status
// now, and each field before and after.
type CardData struct {
	ID      string              `json:"id"`
	Handle  string              `json:"handle"`
	Title   string              `json:"title"`
	Status  string              `json:"status"`
	Changes []board.FieldChange `json:"changes"`
}

// Emit stores an event for each callback of its channel and wakes the
// sender. A channel without callbacks costs nothing.
func (o *Outbox) Emit(ctx context.Context, ev bot.Event) error {
	rows, err := o.Encode(ev)
	if err != nil || len(rows) == 0 {
		return err
	}
	if err := o.queue.InsertEvents(ctx, rows); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	o.Wake()
	return nil
}

// Wake makes the sender look for due events now: events were written,
// by Emit or in a decision's own transaction.
func (o *Outbox) Wake() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Encode turns an event into the outbox rows of its channel's callbacks,
// for a decision to write in its own transaction; none when the channel
// has no callbacks.
func (o *Outbox) Encode(ev bot.Event) ([]board.OutboundEvent, error) {
	eps := o.cfg.Routes[ev.Channel()]
	if ev.Type == bot.EventCardDispatched {
		eps = o.cfg.Hooks[ev.Hook]
	}
	if len(eps) == 0 {
		return nil, nil
	}
	if ev.Job != nil {
		return encodeJob(ev, eps)
	}
	if ev.Run != nil {
		r := ev.Run
		return encode(ev, eps, Data{Channel: ev.Channel(), Actor: ev.Actor, BoardName: ev.RunBoard.Name, BoardID: string(ev.BoardID),
			BoardURL: ev.BoardURL,
			Run:      &RunData{ID: string(r.ID), Number: r.Number, State: r.State, Trigger: r.Trigger, Reason: r.Reason, Cards: len(r.Cards), URL: fmt.Sprintf("%s/runs/%d", ev.BoardURL, r.Number)}})
	}
	if ev.Card != nil {
		c := ev.Card.Card
		return encode(ev, eps, Data{Channel: ev.Channel(), Actor: ev.Actor, BoardName: ev.Card.Board.Name,
			BoardID: string(ev.BoardID), BoardURL: ev.BoardURL,
			Card: &CardData{ID: string(c.ID), Handle: c.Handle, Title: c.Title, Status: c.Status, Changes: ev.Card.Changes}})
	}
	p := ev.Proposal
	st := p.Plan.Stats()
	d := Data{
		ProposalID: p.ID, State: p.State, Version: p.Version, Channel: ev.Channel(), RequestID: p.RequestID,
		RequestedBy: p.RequestedBy, Request: p.Request, Actor: ev.Actor, Cards: st.Cards, Links: st.Links,
		BoardID: string(ev.BoardID), BoardURL: ev.BoardURL, Reason: p.Reason,
	}
	if p.State == board.ProposalPending {
		d.ExpiresAt = p.ExpiresAt
	}
	for _, a := range p.Plan.Actions {
		if a.Board != nil {
			d.BoardName = a.Board.Name
		}
	}
	return encode(ev, eps, d)
}

// encode is one event's row for its endpoints, under the event's
// webhook-id.
func encode(ev bot.Event, eps []Endpoint, d Data) ([]board.OutboundEvent, error) {
	body, err := json.Marshal(Payload{Type: ev.Type, Timestamp: ev.At.UTC(), Data: d})
	if err != nil {
		return nil, fmt.Errorf("outbox: encode %s: %w", ev.Type, err)
	}
	urls := make([]string, len(eps))
	for i, ep := range eps {
		urls[i] = ep.URL
	}
	return []board.OutboundEvent{{MsgID: MsgID(ev), Type: string(ev.Type), Endpoints: urls, Body: body}}, nil
}

// MsgID is an event's webhook-id, made from what the event is about (a
// proposal's event, or a card at the version a change made), never drawn
// at random: an event emitted again (a reclaimed request, a retried
// decision) has the same id, and the outbox keeps one row of it, so a
// receiver hears each event under one webhook-id.
func MsgID(ev bot.Event) string {
	key := string(ev.Type) + "\x00" + string(ev.Proposal.ID)
	if ev.Run != nil {
		key = string(ev.Type) + "\x00" + string(ev.Run.ID)
	}
	if ev.Card != nil {
		key = fmt.Sprintf("%s\x00%s\x00%d", ev.Type, ev.Card.Card.ID, ev.Card.Card.Version)
	}
	if ev.Job != nil {
		// Each dispatch (each taking of the card) is an event of its own.
		key = fmt.Sprintf("%s\x00%s\x00%s\x00%s", ev.Type, ev.Job.Run.ID, ev.Job.Card.ID, ev.Job.Holder)
	}
	sum := sha256.Sum256([]byte(key))
	return "msg_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:15]))
}

// Prune deletes delivered and given-up rows older than Keep and returns
// how many; a receiver's duplicate check needs only recent ids.
func (o *Outbox) Prune(ctx context.Context) (int64, error) {
	return o.queue.PruneEvents(ctx, o.cfg.Keep)
}

// Status counts the outbox's rows by state, for tests and operators.
type Status struct {
	Pending, Delivered, Failed int
}

// Status returns how many rows are pending, delivered and given up.
func (o *Outbox) Status(ctx context.Context) (Status, error) {
	c, err := o.queue.OutboxCounts(ctx)
	return Status(c), err
}
