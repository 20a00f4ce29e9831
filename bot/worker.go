package bot

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bobnet/bobnet/board"
)

// Run consumes the request queue with the configured workers, renews the
// leases of the requests it works on, reclaims requests of dead workers
// and expires proposals, until ctx is done. Then it lets the messages
// being posted finish, sends those still queued (for up to FlushTimeout)
// and returns; requests not yet answered stay on the stream for another
// replica or the next start.
func (e *Engine) Run(ctx context.Context) error {
	defer e.out.close()
	for {
		err := e.deps.Queue.Init(ctx)
		if err == nil {
			break
		}
		e.logger.Warn("request queue not ready; retrying", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	var wg sync.WaitGroup
	for i := range e.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.work(ctx, fmt.Sprintf("%s-%d", e.cfg.ConsumerName, i))
		}()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		e.sweep(ctx)
	}()
	go func() {
		defer wg.Done()
		e.renewLeases(ctx)
	}()
	wg.Wait()
	return nil
}

// work is one worker's loop: reclaim what dead workers left, then read.
func (e *Engine) work(ctx context.Context, consumer string) {
	lastReclaim := time.Time{}
	for ctx.Err() == nil {
		var batch []board.QueuedRequest
		var err error
		if time.Since(lastReclaim) > e.cfg.ReclaimIdle/2 {
			lastReclaim = time.Now()
			batch, err = e.deps.Queue.Reclaim(ctx, consumer, e.cfg.ReclaimIdle)
			for _, d := range batch {
				e.logger.Info("reclaimed a request from a dead or stuck worker", "request", d.RequestID)
			}
		}
		if err == nil && len(batch) == 0 {
			batch, err = e.deps.Queue.Read(ctx, consumer, time.Second)
		}
		if err != nil {
			if ctx.Err() == nil {
				e.logger.Warn("read request queue", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		for _, d := range batch {
			if ctx.Err() != nil {
				return // unacked: another worker reclaims it
			}
			e.leases.hold(consumer, d.MessageID)
			e.handle(ctx, consumer, d)
		}
	}
}

// taking records a request as taken, its audit row and its record as
// planning, once: started as its model is asked (start), so that the
// writes go on during the model's call rather than beside the reads of
// what the model is shown, which twenty requests taken at once make on
// two busy cores; wait starts them where no model is asked and waits
// until they are written.
type taking struct {
	once   sync.Once
	wg     sync.WaitGroup
	record func(*sync.WaitGroup) // nil: taken before, nothing to record
}

func (t *taking) start() {
	t.once.Do(func() {
		if t.record != nil {
			t.record(&t.wg)
		}
	})
}

func (t *taking) wait() {
	t.start()
	t.wg.Wait()
}

// handle takes one request: records it as taken (once), plans its answer
// (once: the answer is kept until posted) and hands the answer to the
// request's channel to post. The stream entry is acknowledged only once the
// answer is posted, so a crash anywhere before leaves the request to be
// reclaimed and finished, never lost and never planned twice.
func (e *Engine) handle(ctx context.Context, consumer string, d board.QueuedRequest) {
	id := d.RequestID
	var rec board.RequestRecord
	var err error
	if d.Record != nil {
		rec = *d.Record
	} else {
		rec, err = e.deps.Requests.Request(ctx, id)
	}
	if errors.Is(err, ErrNotFound) {
		e.logger.Warn("queued request has no record; dropping it", "request", id)
		e.ack(ctx, consumer, d)
		return
	}
	if err != nil {
		e.logger.Warn("load request", "request", id, "err", err)
		e.leases.drop(consumer, d.MessageID) // reclaimed once Redis answers again
		return
	}
	if rec.Status.State == board.RequestDone || rec.Status.State == board.RequestFailed {
		e.ack(ctx, consumer, d) // answered before its worker died; only the ack was lost
		return
	}
	if d.Count > MaxDeliveries {
		e.giveUp(ctx, consumer, d, rec)
		return
	}
	r := rec.Request
	if !rec.Taken && r.Webhook != nil {
		if closed := e.takeDelivery(ctx, consumer, d, rec); closed {
			return
		}
	}
	// Taking a request is recorded (its audit row, its record as
	// planning) while the model is asked (see taking); both are written
	// before anything the answer records.
	tk := &taking{}
	fresh := !rec.Taken
	if !rec.Taken {
		// The first thing recorded about a request, so the audit reads in
		// the order things happened; its key keeps it to one row.
		detail := map[string]any{"request_id": id, "source": r.Thread.Channel.Source, "revises": r.Revises, "again": r.Again}
		if r.Via != "" {
			detail["via"] = r.Via // the worker's context does not carry it
		}
		rec.Taken, rec.Status.State = true, board.RequestPlanning
		taken := rec
		tk.record = func(wg *sync.WaitGroup) {
			wg.Go(func() {
				e.audit(ctx, board.AuditEvent{Actor: r.User, Action: "requested", Channel: r.Thread.Channel.Key(), DedupeKey: "requested:" + string(id)}, detail)
			})
			wg.Go(func() {
				if err := e.deps.Requests.PutRequest(ctx, taken); err != nil {
					e.logger.Warn("store request status", "request", id, "err", err)
				}
			})
		}
	}
	var made *board.Proposal
	var answerStored sync.WaitGroup
	if rec.Answer == nil {
		var ans board.Answer
		ans, made = e.answer(ctx, r, fresh, tk)
		tk.wait()
		if ctx.Err() != nil {
			e.leases.drop(consumer, d.MessageID) // shutting down mid-plan: left for a reclaim
			return
		}
		if transient(ans) && d.Count < MaxDeliveries {
			// Postgres or Redis is away for a moment: try again after a
			// reclaim instead of answering "try again" and then, when the
			// person does, answering twice.
			e.logger.Warn("request not answered yet: "+ans.Failure+"; it will be tried again", "request", id, "delivery", d.Count)
			e.leases.drop(consumer, d.MessageID)
			return
		}
		rec.Answer = &ans
		planned := rec
		storeAnswer := func() {
			if err := e.deps.Requests.PutRequest(ctx, planned); err != nil {
				e.logger.Warn("store planned answer", "request", id, "err", err)
			}
		}
		if ans.ProposalID == "" {
			storeAnswer()
		} else {
			// A proposal is found again by the request's id after a crash
			// (answerOf), so its answer is stored while it is posted; the
			// request is recorded done after both.
			answerStored.Go(storeAnswer)
		}
	}
	tk.wait() // a record found answered but not taken: its taking is written before its post
	if err := e.out.send(r.Thread.Channel.Key(), func(pctx context.Context) { e.post(pctx, consumer, d, rec, made, answerStored.Wait) }); err != nil {
		e.logger.Warn("answer not posted yet: "+err.Error()+"; it will be retried", "request", id)
		e.leases.drop(consumer, d.MessageID)
	}
}

// takeDelivery records the webhook delivery a request came from before
// anything else is written about it. The ack path only dedupes in Redis
// (for as long as the request's record lives there); Postgres keeps the
// delivery for good, so a redelivery that outlived its Redis key, or that
// Redis lost, is closed here as a duplicate instead of planned again. It
// reports whether the request is finished with (closed, or left for a
// retry because Postgres did not answer).
func (e *Engine) takeDelivery(ctx context.Context, consumer string, d board.QueuedRequest, rec board.RequestRecord) bool {
	w := rec.Request.Webhook
	res, err := e.deps.Deliveries.RecordDelivery(ctx, board.Delivery{Hook: w.Hook, ID: w.ID, RequestID: rec.Request.ID, ReceivedAt: rec.Request.ReceivedAt})
	if err != nil {
		e.logger.Warn("record webhook delivery; the request is retried", "request", rec.Request.ID, "hook", w.Hook, "delivery", w.ID, "err", err)
		e.leases.drop(consumer, d.MessageID) // reclaimed once Postgres answers again
		return true
	}
	if res.Own {
		return false // this request's own delivery (new, or recorded before a crash)
	}
	e.logger.Info("webhook redelivery closed as a duplicate", "request", rec.Request.ID, "hook", w.Hook, "delivery", w.ID, "first", res.RequestID)
	rec.Taken = true
	rec.Status.State, rec.Status.DuplicateOf = board.RequestDone, res.RequestID
	if err := e.deps.Requests.PutRequest(ctx, rec); err != nil {
		e.logger.Warn("store request status", "request", rec.Request.ID, "err", err)
		e.leases.drop(consumer, d.MessageID)
		return true
	}
	e.ack(ctx, consumer, d)
	return true
}

func (e *Engine) ack(ctx context.Context, consumer string, d board.QueuedRequest) {
	if err := e.deps.Queue.Ack(ctx, d.MessageID); err != nil {
		e.logger.Warn("ack request", "request", d.RequestID, "err", err)
	}
	e.leases.drop(consumer, d.MessageID)
}
