// Package outbox tells other tools what happened: the engine's events are
// written to a Postgres outbox, one row per callback URL, and POSTed signed
// as Standard Webhooks with retries and exponential backoff. Rows survive
// restarts, so every event is delivered at least once, each with a
// webhook-id that stays the same across retries. Callbacks reach only
// allow-listed hosts, and never loopback or private addresses unless those
// ranges are allowed too.
package outbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bobnet/bobnet/adapters/webhook"
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

// Outbox stores and sends events; it is the engine's bot.EventSink.
type Outbox struct {
	cfg     Config
	pool    *pgxpool.Pool
	logger  *slog.Logger
	client  *http.Client
	secrets map[string]string
	wake    chan struct{}
}

// New returns an outbox on pool. Nothing is sent until Run.
func New(cfg Config, pool *pgxpool.Pool, logger *slog.Logger) *Outbox {
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
	o := &Outbox{cfg: cfg, pool: pool, logger: logger, secrets: map[string]string{}, wake: make(chan struct{}, 1)}
	for _, eps := range cfg.Routes {
		for _, ep := range eps {
			o.secrets[ep.URL] = ep.Secret
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
	ProposalID  bot.ProposalID    `json:"proposal_id,omitempty"`
	State       bot.ProposalState `json:"state,omitempty"`
	Version     int               `json:"version,omitempty"`
	Channel     string            `json:"channel"`
	RequestID   bot.RequestID     `json:"request_id,omitempty"`
	RequestedBy string            `json:"requested_by,omitempty"`
	Request     string            `json:"request,omitempty"`
	Actor       string            `json:"actor,omitempty"`
	BoardName   string            `json:"board_name,omitempty"`
	Cards       int               `json:"cards,omitempty"`
	Links       int               `json:"links,omitempty"`
	ExpiresAt   time.Time         `json:"expires_at,omitzero"`
	BoardID     string            `json:"board_id,omitempty"`
	BoardURL    string            `json:"board_url,omitempty"`
	// Card is set on card.changed: the card as it is now and what changed.
	Card *CardData `json:"card,omitempty"`
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

const insertEvent = `INSERT INTO event_outbox (msg_id, event_type, endpoint, body)
SELECT $1, $2, unnest($3::text[]), $4 ON CONFLICT (msg_id, endpoint) DO NOTHING`

// Emit stores an event for each callback of its channel and wakes the
// sender. A channel without callbacks costs nothing.
func (o *Outbox) Emit(ctx context.Context, ev bot.Event) error {
	eps := o.cfg.Routes[ev.Channel()]
	if len(eps) == 0 {
		return nil
	}
	if ev.Card != nil {
		c := ev.Card.Card
		return o.store(ctx, ev, eps, Data{Channel: ev.Channel(), Actor: ev.Actor, BoardName: ev.Card.Board.Name,
			BoardID: string(ev.BoardID), BoardURL: ev.BoardURL,
			Card: &CardData{ID: string(c.ID), Handle: c.Handle, Title: c.Title, Status: c.Status, Changes: ev.Card.Changes}})
	}
	p := ev.Proposal
	st := p.Plan.Stats()
	d := Data{
		ProposalID: p.ID, State: p.State, Version: p.Version, Channel: ev.Channel(), RequestID: p.RequestID,
		RequestedBy: p.RequestedBy, Request: p.Request, Actor: ev.Actor, Cards: st.Cards, Links: st.Links,
		BoardID: string(ev.BoardID), BoardURL: ev.BoardURL,
	}
	if p.State == bot.ProposalPending {
		d.ExpiresAt = p.ExpiresAt
	}
	for _, a := range p.Plan.Actions {
		if a.Board != nil {
			d.BoardName = a.Board.Name
		}
	}
	return o.store(ctx, ev, eps, d)
}

// store writes one event's row for its endpoints and wakes the sender.
func (o *Outbox) store(ctx context.Context, ev bot.Event, eps []Endpoint, d Data) error {
	body, err := json.Marshal(Payload{Type: ev.Type, Timestamp: ev.At.UTC(), Data: d})
	if err != nil {
		return fmt.Errorf("outbox: encode %s: %w", ev.Type, err)
	}
	urls := make([]string, len(eps))
	for i, ep := range eps {
		urls[i] = ep.URL
	}
	if _, err := o.pool.Exec(ctx, insertEvent, newMsgID(), string(ev.Type), urls, body); err != nil {
		return fmt.Errorf("outbox: store %s: %w", ev.Type, err)
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return nil
}

func newMsgID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "msg_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// Run sends due events until ctx is done, and now and then forgets the
// rows that are done with.
func (o *Outbox) Run(ctx context.Context) {
	t := time.NewTicker(o.cfg.PollInterval)
	defer t.Stop()
	var lastPrune time.Time
	for {
		if time.Since(lastPrune) > time.Hour {
			lastPrune = time.Now()
			if _, err := o.Prune(ctx); err != nil && ctx.Err() == nil {
				o.logger.Warn("outbox: prune", "err", err)
			}
		}
		for {
			n, err := o.SendDue(ctx)
			if err != nil && ctx.Err() == nil {
				o.logger.Warn("outbox: send due events", "err", err)
			}
			if n == 0 || err != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-o.wake:
		case <-t.C:
		}
	}
}

// claimDue leases the oldest undelivered row of each endpoint that is due,
// so one endpoint hears its events in order and two senders never send
// the same row at once.
const claimDue = `UPDATE event_outbox SET next_attempt_at = now() + $2 * interval '1 millisecond'
WHERE id IN (
    SELECT o.id FROM event_outbox o
    WHERE o.delivered_at IS NULL AND o.failed_at IS NULL AND o.next_attempt_at <= now()
      AND NOT EXISTS (SELECT 1 FROM event_outbox e WHERE e.endpoint = o.endpoint AND e.id < o.id
                      AND e.delivered_at IS NULL AND e.failed_at IS NULL)
    ORDER BY o.id LIMIT $1
    FOR UPDATE SKIP LOCKED)
RETURNING id, msg_id, endpoint, body, attempts,
    EXISTS (SELECT 1 FROM callback_endpoints_disabled d WHERE d.endpoint = event_outbox.endpoint)`

const (
	markDelivered = `UPDATE event_outbox SET delivered_at = now(), attempts = attempts + 1, last_error = '' WHERE id = $1`
	markRetry     = `UPDATE event_outbox SET attempts = attempts + 1, last_error = $2,
next_attempt_at = now() + $3 * interval '1 millisecond' WHERE id = $1`
	markFailed = `UPDATE event_outbox SET attempts = attempts + 1, last_error = $2, failed_at = now() WHERE id = $1`
	// markSkipped gives up a row of a disabled endpoint without sending it.
	markSkipped = `UPDATE event_outbox SET last_error = $2, failed_at = now() WHERE id = $1`

	// disableEndpoint records an endpoint's 410 Gone and gives up its
	// other pending rows: the receiver said it will never take them.
	disableEndpoint = `WITH d AS (
    INSERT INTO callback_endpoints_disabled (endpoint, reason) VALUES ($1, $2)
    ON CONFLICT (endpoint) DO UPDATE SET disabled_at = now(), reason = excluded.reason)
UPDATE event_outbox SET last_error = 'not sent: the endpoint answered 410 Gone and is disabled', failed_at = now()
WHERE endpoint = $1 AND id <> $3 AND delivered_at IS NULL AND failed_at IS NULL`
)

type row struct {
	id       int64
	msgID    string
	endpoint string
	body     []byte
	attempts int
	disabled bool
}

// SendDue sends the events that are due, one per endpoint, and returns how
// many it tried.
func (o *Outbox) SendDue(ctx context.Context) (int, error) {
	rows, err := o.pool.Query(ctx, claimDue, 32, o.cfg.Lease.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("claim due events: %w", err)
	}
	due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.id, &x.msgID, &x.endpoint, &x.body, &x.attempts, &x.disabled)
		return x, err
	})
	if err != nil {
		return 0, fmt.Errorf("claim due events: %w", err)
	}
	done := make(chan struct{}, len(due))
	for _, r := range due {
		go func() {
			defer func() { done <- struct{}{} }()
			o.deliver(ctx, r)
		}()
	}
	for range due {
		<-done
	}
	return len(due), nil
}

// deliver sends one row and records how it went.
func (o *Outbox) deliver(ctx context.Context, r row) {
	bg := context.WithoutCancel(ctx)
	if r.disabled {
		if _, err := o.pool.Exec(bg, markSkipped, r.id, "not sent: the endpoint answered 410 Gone and is disabled"); err != nil {
			o.logger.Warn("outbox: give up an event of a disabled endpoint", "msg_id", r.msgID, "err", err)
		}
		return
	}
	err := o.post(ctx, r)
	var gone *goneError
	var later *retryAfterError
	switch {
	case errors.As(err, &gone):
		o.logger.Warn("outbox: endpoint answered 410 Gone; disabling it", "endpoint", r.endpoint, "msg_id", r.msgID)
		if _, err := o.pool.Exec(bg, markFailed, r.id, err.Error()); err != nil {
			o.logger.Warn("outbox: mark failed", "msg_id", r.msgID, "err", err)
		}
		if _, err := o.pool.Exec(bg, disableEndpoint, r.endpoint, err.Error(), r.id); err != nil {
			o.logger.Warn("outbox: disable endpoint", "endpoint", r.endpoint, "err", err)
		}
	case err == nil:
		if _, err := o.pool.Exec(bg, markDelivered, r.id); err != nil {
			o.logger.Warn("outbox: mark delivered", "msg_id", r.msgID, "err", err)
		}
	case r.attempts+1 >= o.cfg.MaxAttempts || errors.Is(err, errPermanent):
		o.logger.Warn("outbox: giving up on an event", "msg_id", r.msgID, "endpoint", r.endpoint, "attempts", r.attempts+1, "err", err)
		if _, err := o.pool.Exec(bg, markFailed, r.id, err.Error()); err != nil {
			o.logger.Warn("outbox: mark failed", "msg_id", r.msgID, "err", err)
		}
	default:
		wait := o.backoff(r.attempts + 1)
		if errors.As(err, &later) {
			// The receiver said when to come back: not before then.
			wait = max(wait, later.wait)
		}
		o.logger.Info("outbox: delivery failed; will retry", "msg_id", r.msgID, "endpoint", r.endpoint, "in", wait, "err", err)
		if _, err := o.pool.Exec(bg, markRetry, r.id, truncate(err.Error(), 500), wait.Milliseconds()); err != nil {
			o.logger.Warn("outbox: schedule retry", "msg_id", r.msgID, "err", err)
		}
	}
}

// errPermanent marks a failure no retry can fix.
var errPermanent = errors.New("permanent failure")

// backoff is the wait after the n-th failed attempt: RetryBase doubled
// per attempt, capped, with up to 20% jitter so many receivers coming back
// at once are not all hit together.
func (o *Outbox) backoff(n int) time.Duration {
	d := o.cfg.RetryBase
	for i := 1; i < n && d < o.cfg.RetryMax; i++ {
		d *= 2
	}
	d = min(d, o.cfg.RetryMax)
	return d + time.Duration(mrand.Int64N(int64(d)/5+1))
}

// post signs and sends one event.
func (o *Outbox) post(ctx context.Context, r row) error {
	secret, ok := o.secrets[r.endpoint]
	if !ok {
		return fmt.Errorf("%w: %s is no longer a configured callback", errPermanent, r.endpoint)
	}
	u, err := url.Parse(r.endpoint)
	if err != nil || !slices.Contains(o.cfg.AllowHosts, strings.ToLower(u.Hostname())) {
		return fmt.Errorf("%w: %s is not on outbound.allow_hosts", errPermanent, r.endpoint)
	}
	// Only a whsec_ secret is read the same way by every receiver's
	// library; configuration refuses others, and so does the sender.
	if err := webhook.CheckCallbackSecret(secret); err != nil {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	h, err := webhook.StandardHeaders(secret, r.msgID, time.Now(), r.body)
	if err != nil {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.endpoint, bytes.NewReader(r.body))
	if err != nil {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "BobNet-Webhooks")
	resp, err := o.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		return nil
	case resp.StatusCode == http.StatusGone:
		return &goneError{endpoint: r.endpoint}
	}
	err = fmt.Errorf("%s answered %s", r.endpoint, resp.Status)
	if wait, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		return &retryAfterError{err: err, wait: wait}
	}
	return err
}

// goneError is a 410 Gone: the receiver asks never to be sent to again.
type goneError struct{ endpoint string }

func (e *goneError) Error() string { return e.endpoint + " answered 410 Gone" }

// retryAfterError is a failed attempt whose answer said when to retry.
type retryAfterError struct {
	err  error
	wait time.Duration
}

func (e *retryAfterError) Error() string { return fmt.Sprintf("%v (Retry-After %s)", e.err, e.wait) }
func (e *retryAfterError) Unwrap() error { return e.err }

// maxRetryAfter caps what a receiver may ask for, so one wrong header
// does not park an endpoint's events for months.
const maxRetryAfter = 24 * time.Hour

// retryAfter reads a Retry-After value: delay seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		d = time.Duration(min(n, int64(maxRetryAfter/time.Second))) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = max(at.Sub(now), 0)
	} else {
		return 0, false
	}
	return min(d, maxRetryAfter), true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

const pruneRows = `DELETE FROM event_outbox
WHERE (delivered_at IS NOT NULL AND delivered_at < now() - $1 * interval '1 millisecond')
   OR (failed_at IS NOT NULL AND failed_at < now() - $1 * interval '1 millisecond')`

// Prune deletes delivered and given-up rows older than Keep and returns
// how many; a receiver's duplicate check needs only recent ids.
func (o *Outbox) Prune(ctx context.Context) (int64, error) {
	tag, err := o.pool.Exec(ctx, pruneRows, o.cfg.Keep.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("prune outbox: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Status counts the outbox's rows by state, for tests and operators.
type Status struct {
	Pending, Delivered, Failed int
}

const selectStatus = `SELECT count(*) FILTER (WHERE delivered_at IS NULL AND failed_at IS NULL),
count(*) FILTER (WHERE delivered_at IS NOT NULL), count(*) FILTER (WHERE failed_at IS NOT NULL) FROM event_outbox`

// Status returns how many rows are pending, delivered and given up.
func (o *Outbox) Status(ctx context.Context) (Status, error) {
	var s Status
	if err := o.pool.QueryRow(ctx, selectStatus).Scan(&s.Pending, &s.Delivered, &s.Failed); err != nil {
		return s, fmt.Errorf("outbox status: %w", err)
	}
	return s, nil
}
