package webhook

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bobnet/bobnet/board"
)

// maxBatch bounds how many deliveries one statement records.
const maxBatch = 256

// batcher records deliveries in groups: while one statement is in flight
// the next deliveries queue, and the next statement takes them all. Under
// a burst, Postgres sees one insert per round trip instead of one per
// delivery; a lone delivery goes out at once, with no waiting window.
type batcher struct {
	store Deliveries

	mu       sync.Mutex
	queue    []*pendingDelivery
	flushing bool
}

type pendingDelivery struct {
	d    board.Delivery
	done chan deliveryOutcome // buffered: the flusher never blocks on it
}

type deliveryOutcome struct {
	res board.DeliveryResult
	err error
}

// record records one delivery as part of the next batch.
func (b *batcher) record(ctx context.Context, d board.Delivery) (board.DeliveryResult, error) {
	p := &pendingDelivery{d: d, done: make(chan deliveryOutcome, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, p)
	start := !b.flushing
	b.flushing = true
	b.mu.Unlock()
	if start {
		go b.flush()
	}
	select {
	case o := <-p.done:
		return o.res, o.err
	case <-ctx.Done():
		// The batch may still record it. Then give it back, as a failed
		// submit does, so the sender's retry is not answered with a
		// request id that was never queued.
		go func() {
			if o := <-p.done; o.err == nil && o.res.IsNew {
				_ = b.store.ForgetDelivery(context.Background(), d.Hook, d.ID)
			}
		}()
		return board.DeliveryResult{}, fmt.Errorf("record delivery %s/%s: %w", d.Hook, d.ID, ctx.Err())
	}
}

// flush writes batches until the queue is empty.
func (b *batcher) flush() {
	for {
		b.mu.Lock()
		n := min(len(b.queue), maxBatch)
		if n == 0 {
			b.flushing = false
			b.mu.Unlock()
			return
		}
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		b.mu.Unlock()

		ds := make([]board.Delivery, n)
		for i, p := range batch {
			ds[i] = p.d
		}
		// Not any one sender's context: the batch is everyone's.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := b.store.RecordDeliveries(ctx, ds)
		cancel()
		for i, p := range batch {
			if err != nil {
				p.done <- deliveryOutcome{err: err}
				continue
			}
			p.done <- deliveryOutcome{res: res[i]}
		}
	}
}
