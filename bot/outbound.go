package bot

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/bobnet/bobnet/board"
)

// outbound sends the engine's messages to the platforms, off every path
// that answers a platform or an API caller: one queue per channel, drained
// by its own goroutine, so a stalled platform API delays only the messages
// to its channels, and a message to a channel never overtakes an earlier
// one to the same channel (a preview before its "Approved by").
type outbound struct {
	timeout time.Duration
	// flush is how long a closing outbound keeps sending what is queued.
	flush  time.Duration
	logger *slog.Logger

	mu      sync.Mutex
	queues  map[string]chan func(context.Context)
	closed  bool
	flushBy time.Time // set once closing
	stop    chan struct{}
	wg      sync.WaitGroup

	// halt ends when a closing outbound's flush time is over: every post,
	// and every write recording one (retryWrite included), runs under a
	// context it ends, so a Redis or Postgres that does not answer cannot
	// hold a shutdown past its flush time.
	halt    context.Context
	haltNow context.CancelFunc
}

// Why send refused a message.
var (
	errOutboundFull   = errors.New("the channel's outbound queue is full")
	errOutboundClosed = errors.New("the engine has stopped")
)

// outboundQueue is how many messages one channel may have waiting; past
// it new ones are refused (a throttle notice is dropped, an answer is left
// on the request stream for later).
const outboundQueue = 256

// outboundIdle is how long a channel's goroutine waits for more before it
// ends.
const outboundIdle = 30 * time.Second

func newOutbound(timeout, flush time.Duration, logger *slog.Logger) *outbound {
	halt, haltNow := context.WithCancel(context.Background())
	return &outbound{timeout: timeout, flush: flush, logger: logger, queues: map[string]chan func(context.Context){}, stop: make(chan struct{}),
		halt: halt, haltNow: haltNow}
}

// detached is ctx's values without its deadline or cancellation, for work
// that must finish once started (recording a post that went out), ended
// only when the outbound halts at the end of a shutdown's flush time.
// done releases it.
func (o *outbound) detached(ctx context.Context) (_ context.Context, done func()) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(o.halt, cancel)
	return c, func() {
		stop()
		cancel()
	}
}

// send queues fn for channel, or says why it did not (errOutboundFull,
// errOutboundClosed). fn gets a context bounded by the post timeout.
func (o *outbound) send(channel string, fn func(ctx context.Context)) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return errOutboundClosed
	}
	q, ok := o.queues[channel]
	if !ok {
		q = make(chan func(context.Context), outboundQueue)
		o.queues[channel] = q
		o.wg.Add(1)
		go o.drain(channel, q)
	}
	select {
	case q <- fn:
		return nil
	default:
		return errOutboundFull
	}
}

func (o *outbound) drain(channel string, q chan func(context.Context)) {
	defer o.wg.Done()
	idle := time.NewTimer(outboundIdle)
	defer idle.Stop()
	for {
		select {
		case fn := <-q:
			// A message already started finishes (within its timeout)
			// even while the engine stops, until the flush time is over.
			ctx, cancel := context.WithTimeout(o.halt, o.timeout)
			fn(ctx)
			cancel()
			idle.Reset(outboundIdle)
		case <-idle.C:
			o.mu.Lock()
			if len(q) == 0 {
				delete(o.queues, channel)
				o.mu.Unlock()
				return
			}
			o.mu.Unlock()
			idle.Reset(outboundIdle)
		case <-o.stop:
			o.flushQueue(channel, q)
			return
		}
	}
}

// flushQueue sends what is still queued for channel once the engine
// stops (an "Approved by" behind a slow post is as much owed as the post),
// until the flush deadline; what is left then is dropped, and counted in
// the log. Nothing joins the queue any more: send refuses once closed.
func (o *outbound) flushQueue(channel string, q chan func(context.Context)) {
	o.mu.Lock()
	deadline := o.flushBy
	o.mu.Unlock()
	for {
		select {
		case fn := <-q:
			if !time.Now().Before(deadline) {
				dropped := 1 + len(q)
				for len(q) > 0 {
					<-q
				}
				o.logger.Warn("messages not posted: the engine stopped and its flush time ran out", "channel", channel, "dropped", dropped, "flush", o.flush)
				return
			}
			// WithTimeout inside WithDeadline: the earlier of the two.
			fctx, fcancel := context.WithDeadline(o.halt, deadline)
			ctx, cancel := context.WithTimeout(fctx, o.timeout)
			fn(ctx)
			cancel()
			fcancel()
		default:
			return
		}
	}
}

// runTracked runs fn off the caller's path and outside the channel queues, so
// it is never dropped; close waits for it, until the flush time is over:
// fn's context ends then. Once closing, fn runs at once on the caller's
// path instead.
func (o *outbound) runTracked(fn func(ctx context.Context)) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		fn(o.halt)
		return
	}
	o.wg.Add(1)
	o.mu.Unlock()
	go func() {
		defer o.wg.Done()
		fn(o.halt)
	}()
}

// stopping reports whether the engine is stopping: an answer that failed
// to post now is left for another replica rather than given up on.
func (o *outbound) stopping() bool {
	select {
	case <-o.stop:
		return true
	default:
		return false
	}
}

// close refuses new messages, lets the ones being sent finish, sends
// those still queued for up to the flush time and waits for them; what is
// still queued then is dropped (an answer's request stays on the stream,
// unacknowledged, for another replica or the next start). When the flush
// time is over, halt ends every post and recording still running, so
// close returns by then (and a moment for them to see it) whatever Redis,
// Postgres or the chat platforms do.
func (o *outbound) close() {
	o.mu.Lock()
	if !o.closed {
		o.closed = true
		o.flushBy = time.Now().Add(o.flush)
		close(o.stop)
	}
	flushBy := o.flushBy
	o.mu.Unlock()
	halt := time.AfterFunc(time.Until(flushBy), o.haltNow)
	defer halt.Stop()
	o.wg.Wait()
	o.haltNow()
}

// queuePost queues what fn posts with the poster of t's surface, off the
// caller's path, logging a failure as what with the attributes in about:
// the id of the request or proposal the message is about.
func (e *Engine) queuePost(t board.Thread, what string, fn func(ctx context.Context, p Poster) error, about ...any) {
	poster := e.poster(t.Channel.Source)
	if err := e.out.send(t.Channel.Key(), func(ctx context.Context) {
		if err := fn(ctx, poster); err != nil {
			e.logger.Warn(what, append(slices.Clip(about), "channel", t.Channel.Key(), "err", err)...)
		}
	}); err != nil {
		e.logger.Warn(what+": dropped: "+err.Error(), append(slices.Clip(about), "channel", t.Channel.Key())...)
	}
}

// notify tells one person something about request id, privately where
// the surface can.
func (e *Engine) notify(t board.Thread, user string, id board.RequestID, r board.Reply) {
	n := e.registration(t.Channel.Source).Notifier
	e.queuePost(t, "notify", func(ctx context.Context, p Poster) error {
		if n != nil {
			return n.Notify(ctx, t, user, r)
		}
		return p.Reply(ctx, t, r)
	}, "request", id, "user", user)
}

// leases are the requests this process is working on, by consumer. Their
// stream entries are renewed while held, so no other worker reclaims a
// request whose model is merely slow or whose answer is waiting for a slow
// platform.
type leases struct {
	mu   sync.Mutex
	held map[string]map[string]struct{} // consumer -> stream message ids
}

func newLeases() *leases { return &leases{held: map[string]map[string]struct{}{}} }

func (l *leases) hold(consumer, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[consumer] == nil {
		l.held[consumer] = map[string]struct{}{}
	}
	l.held[consumer][msg] = struct{}{}
}

func (l *leases) drop(consumer, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.held[consumer], msg)
}

func (l *leases) snapshot() map[string][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]string{}
	for c, msgs := range l.held {
		for m := range msgs {
			out[c] = append(out[c], m)
		}
	}
	return out
}

// renewLeases keeps this process's requests from being reclaimed while it
// works on them: every third of ReclaimIdle it resets their idle time.
func (e *Engine) renewLeases(ctx context.Context) {
	t := time.NewTicker(e.cfg.ReclaimIdle / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for consumer, msgs := range e.leases.snapshot() {
			if err := e.deps.Queue.Renew(ctx, consumer, msgs); err != nil && ctx.Err() == nil {
				e.logger.Warn("renew request leases", "consumer", consumer, "err", err)
			}
		}
	}
}
