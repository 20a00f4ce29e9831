package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bobnet/bobnet/adapters/webhook"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/signing"
)

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

// claimLimit is how many rows one claim leases at most.
const claimLimit = 32

// claimTimeout bounds the claim: a stalled Postgres delays the next poll,
// not the shutdown.
const claimTimeout = 10 * time.Second

// writeTimeout bounds recording how an attempt went, which is done even
// while stopping so no row stays claimed for nothing.
const writeTimeout = 5 * time.Second

// SendDue sends the events that are due, one per endpoint, and returns how
// many it tried. A stopping sender (ctx done) claims nothing: a row it
// claimed would wait out the lease before anyone sent it.
func (o *Outbox) SendDue(ctx context.Context) (int, error) {
	if ctx.Err() != nil {
		return 0, nil
	}
	cctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	due, err := o.queue.ClaimEvents(cctx, claimLimit, o.cfg.Lease)
	if err != nil {
		return 0, err
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

// deliver sends one row and records how it went. A POST that a shutdown
// aborted is no attempt: the row is given back as it was.
func (o *Outbox) deliver(ctx context.Context, r board.ClaimedEvent) {
	if r.Disabled {
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
		defer cancel()
		if err := o.queue.SkipEvent(bg, r.ID, "not sent: the endpoint answered 410 Gone and is disabled"); err != nil {
			o.logger.Warn("outbox: give up an event of a disabled endpoint", "msg_id", r.MsgID, "err", err)
		}
		return
	}
	err := o.post(ctx, r)
	// The record's deadline starts once the POST is answered.
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	var gone *goneError
	var later *retryAfterError
	switch {
	case err != nil && ctx.Err() != nil:
		o.logger.Info("outbox: stopping; the event is left for the next sender", "msg_id", r.MsgID, "endpoint", r.Endpoint)
		if err := o.queue.ReleaseEvent(bg, r.ID); err != nil {
			o.logger.Warn("outbox: give back an event", "msg_id", r.MsgID, "err", err)
		}
	case errors.As(err, &gone):
		o.logger.Warn("outbox: endpoint answered 410 Gone; disabling it", "endpoint", r.Endpoint, "msg_id", r.MsgID)
		if err := o.queue.FailEvent(bg, r.ID, err.Error()); err != nil {
			o.logger.Warn("outbox: mark failed", "msg_id", r.MsgID, "err", err)
		}
		if err := o.queue.DisableEndpoint(bg, r.Endpoint, err.Error(), r.ID); err != nil {
			o.logger.Warn("outbox: disable endpoint", "endpoint", r.Endpoint, "err", err)
		}
	case err == nil:
		if err := o.queue.MarkEventDelivered(bg, r.ID); err != nil {
			o.logger.Warn("outbox: mark delivered", "msg_id", r.MsgID, "err", err)
		}
	case r.Attempts+1 >= o.cfg.MaxAttempts || errors.Is(err, errPermanent):
		o.logger.Warn("outbox: giving up on an event", "msg_id", r.MsgID, "endpoint", r.Endpoint, "attempts", r.Attempts+1, "err", err)
		if err := o.queue.FailEvent(bg, r.ID, err.Error()); err != nil {
			o.logger.Warn("outbox: mark failed", "msg_id", r.MsgID, "err", err)
		}
	default:
		wait := o.backoff(r.Attempts + 1)
		if errors.As(err, &later) {
			// The receiver said when to come back: not before then.
			wait = max(wait, later.wait)
		}
		o.logger.Info("outbox: delivery failed; will retry", "msg_id", r.MsgID, "endpoint", r.Endpoint, "in", wait, "err", err)
		if err := o.queue.RetryEvent(bg, r.ID, truncate(err.Error(), 500), wait); err != nil {
			o.logger.Warn("outbox: schedule retry", "msg_id", r.MsgID, "err", err)
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
func (o *Outbox) post(ctx context.Context, r board.ClaimedEvent) error {
	secret, ok := o.secrets[r.Endpoint]
	if !ok {
		return fmt.Errorf("%w: %s is no longer a configured callback", errPermanent, r.Endpoint)
	}
	u, err := url.Parse(r.Endpoint)
	if err != nil || !slices.Contains(o.cfg.AllowHosts, strings.ToLower(u.Hostname())) {
		return fmt.Errorf("%w: %s is not on outbound.allow_hosts", errPermanent, r.Endpoint)
	}
	// Only a whsec_ secret is read the same way by every receiver's
	// library; configuration refuses others, and so does the sender.
	if err := webhook.CheckCallbackSecret(secret); err != nil {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	body := r.Body
	if r.Type == string(bot.EventCardDispatched) {
		if body, err = board.ExpandRunTokens(body, o.cfg.CardTokenKeys); err != nil {
			return fmt.Errorf("%w: %w", errPermanent, err)
		}
	}
	h, err := signing.StandardHeaders(secret, r.MsgID, time.Now(), body)
	if err != nil {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.Endpoint, bytes.NewReader(body))
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
		return &goneError{endpoint: r.Endpoint}
	}
	err = fmt.Errorf("%s answered %s", r.Endpoint, resp.Status)
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

func truncate(s string, n int) string { return plan.Cut(s, n, "") }
