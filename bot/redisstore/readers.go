package redisstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// readBlock is how long one XREADGROUP of a shard's reader blocks.
const readBlock = time.Second

// maxBatch caps how many entries one read of a shard's reader takes.
const maxBatch = 64

// drainPoll is how often the reader of a drained stream that is gone
// looks whether an older replica wrote it again.
const drainPoll = 5 * time.Second

// readers are a queue's blocking readers, one per stream, and the
// workers' side of their hand-over. A reader reads only while some
// worker waits in Read, and at most as many entries at once as workers
// wait (shared out between the shards' readers): a busy replica leaves its
// streams to replicas with idle workers, and a burst of requests reaches
// idle workers in a read or two rather than a read each. An entry a reader holds while no worker takes it
// ages in its group; the worker that takes it claims it with a MIN-IDLE
// of that age, so an entry another replica reclaimed meanwhile (its idle
// time reset) is not taken twice.
type readers struct {
	q        *Queue
	ctx      context.Context
	consumer string // the readers' consumer in each group

	hand chan held
	errs chan error
	idle atomic.Int64 // workers waiting in take

	mu   sync.Mutex
	wake chan struct{} // closed when a worker starts waiting
}

// held is an entry a reader read and holds for a worker.
type held struct {
	shard int
	id    string
	req   board.RequestID
	at    time.Time // when the read returned: the entry is at least this old in its group
	// taken is closed by the worker that took the entry once it no
	// longer counts as waiting, so the reader does not read again for it.
	taken chan struct{}
}

// readersFor returns the running readers, starting them (bound to ctx)
// when none run: the first Read of an engine starts them, and they stop
// with its context.
func (q *Queue) readersFor(ctx context.Context, consumer string) *readers {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.readers != nil && q.readers.ctx.Err() == nil {
		return q.readers
	}
	r := &readers{q: q, ctx: ctx, consumer: consumer + "-reader", hand: make(chan held), errs: make(chan error, 1), wake: make(chan struct{})}
	q.readers = r
	for n := range q.layout.Streams {
		go r.read(n, false)
	}
	for _, n := range q.drains {
		go r.read(n, true)
	}
	go r.read(legacyShard, true)
	return r
}

// take waits up to block for an entry from any reader and claims it for
// consumer.
func (r *readers) take(ctx context.Context, consumer string, block time.Duration) ([]board.QueuedRequest, error) {
	r.idle.Add(1)
	r.mu.Lock()
	close(r.wake)
	r.wake = make(chan struct{})
	r.mu.Unlock()
	timer := time.NewTimer(block)
	defer timer.Stop()
	select {
	case h := <-r.hand:
		r.idle.Add(-1)
		close(h.taken)
		return r.claim(ctx, consumer, h)
	case err := <-r.errs:
		r.idle.Add(-1)
		return nil, err
	case <-timer.C:
		r.idle.Add(-1)
		return nil, nil
	case <-ctx.Done():
		r.idle.Add(-1)
		return nil, nil
	}
}

// claim moves a held entry to consumer, unless it changed hands since
// the reader read it, and reads its request's record in the same round
// trip: the worker needs it first.
func (r *readers) claim(ctx context.Context, consumer string, h held) ([]board.QueuedRequest, error) {
	var claim *redis.StringSliceCmd
	var get *redis.StringCmd
	_, _ = r.q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		// go-redis sends whole milliseconds, rounding down, as Redis
		// counts idle time: an entry handed over within its first
		// millisecond asks for MIN-IDLE 0.
		claim = p.XClaimJustID(ctx, &redis.XClaimArgs{
			Stream: r.q.streamOf(h.shard), Group: group, Consumer: consumer, MinIdle: time.Since(h.at), Messages: []string{h.id},
		})
		get = p.Get(ctx, requestKey(r.q.prefix, h.req))
		return nil
	})
	ids, cerr := claim.Result()
	if cerr != nil {
		return nil, wrap("take request", cerr)
	}
	if len(ids) == 0 {
		return nil, nil // reclaimed by another worker meanwhile, or gone
	}
	d := board.QueuedRequest{MessageID: messageID(h.shard, h.id), RequestID: h.req, Count: 1}
	// A record missing or unreadable is left for the worker to read, and
	// to tell why.
	if rec, err := requestOf(h.req, get); err == nil {
		d.Record = &rec
	}
	return []board.QueuedRequest{d}, nil
}

// waitForWorker returns once a worker waits in take (true), or the
// readers stop (false).
func (r *readers) waitForWorker() bool {
	for r.idle.Load() == 0 {
		r.mu.Lock()
		wake := r.wake
		r.mu.Unlock()
		if r.idle.Load() > 0 {
			return true
		}
		select {
		case <-wake:
		case <-r.ctx.Done():
			return false
		}
	}
	return true
}

// read is shard n's reader. A drained stream's reader deletes the stream
// once it is empty with nothing pending, then only looks now and then
// whether it is back.
func (r *readers) read(n int, drain bool) {
	stream := r.q.streamOf(n)
	for r.ctx.Err() == nil {
		if drain {
			exists, err := r.q.rdb.Exists(r.ctx, stream).Result()
			if err == nil && exists == 0 {
				r.pause(drainPoll)
				continue
			}
		}
		if !r.waitForWorker() {
			return
		}
		res, err := r.q.rdb.XReadGroup(r.ctx, &redis.XReadGroupArgs{
			Group: group, Consumer: r.consumer, Streams: []string{stream, ">"}, Count: r.batch(), Block: readBlock,
		}).Result()
		switch {
		case err != nil && strings.Contains(err.Error(), "NOGROUP"):
			err = r.q.rdb.XGroupCreateMkStream(r.ctx, stream, group, "0").Err()
			if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
				r.fail(wrap("create consumer group", err))
			}
			continue
		case errors.Is(err, redis.Nil):
			if drain {
				_ = dropIfDrainedScript.Run(r.ctx, r.q.rdb, []string{stream}, group).Err()
			}
			continue
		case errors.Is(err, redis.ErrClosed):
			return
		case err != nil:
			r.fail(wrap("read requests", err))
			continue
		}
		at := time.Now()
		var batch []held
		for _, s := range res {
			for _, m := range s.Messages {
				id, _ := m.Values["request"].(string)
				batch = append(batch, held{shard: n, id: m.ID, req: board.RequestID(id), at: at, taken: make(chan struct{})})
			}
		}
		for i, h := range batch {
			select {
			case r.hand <- h:
				<-h.taken
			case <-r.ctx.Done():
				for _, left := range batch[i:] {
					r.giveBack(n, left.id)
				}
				return
			}
		}
	}
}

// batch is how many entries a shard's reader reads at once: the workers
// waiting, shared out between the shards, at least one.
func (r *readers) batch() int64 {
	return min(max(r.idle.Load()/int64(max(r.q.layout.Streams, 1)), 1), maxBatch)
}

// giveBack leaves an entry read as the readers stopped (a blocked read
// outlives its context by up to readBlock) to the other replicas at once:
// XCLAIM … IDLE marks it idle for a day, so the next Reclaim anywhere takes
// it, instead of after the reclaim time. JUSTID keeps its delivery count.
func (r *readers) giveBack(shard int, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = r.q.rdb.Do(ctx, "xclaim", r.q.streamOf(shard), group, r.consumer, 0, id,
		"idle", (24 * time.Hour).Milliseconds(), "justid").Err()
}

// fail hands err to a waiting worker (which logs it) and pauses the
// reader a second, as a worker pauses after a failed read.
func (r *readers) fail(err error) {
	if r.ctx.Err() != nil {
		return
	}
	select {
	case r.errs <- err:
	default:
	}
	r.pause(time.Second)
}

func (r *readers) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.ctx.Done():
	}
}
