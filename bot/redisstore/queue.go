package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// group is each stream's consumer group: every engine replica reads from
// it, each request going to one of them.
const group = "engine"

// Queue is the request stream, split into shards by channel (one stream
// and one consumer group each, tagged so each stream is one slot of a
// cluster). One XREADGROUP cannot span slots, so each shard has one
// blocking reader (readers.go) handing entries to the workers that call
// Read. An entry stays pending in its group until it is acknowledged, so a
// request whose worker died is found again by Reclaim, shard by shard.
//
// Besides its shards a queue drains the streams of an earlier layout: the
// one `requests` stream of BobNet before shards, and shards a lowered
// BOBNET_REDIS_STREAMS no longer writes (legacy.go).
type Queue struct {
	rdb    redis.UniversalClient
	prefix string
	layout Layout

	mu      sync.Mutex
	drains  []int // shards beyond Streams being drained, found by Init
	readers *readers
	next    int // the shard Reclaim looks at first
}

// NewQueue returns the request stream under prefix, in the default number
// of shards for rdb's kind.
func NewQueue(rdb redis.UniversalClient, prefix string) *Queue {
	return NewQueueIn(rdb, Layout{Prefix: prefix, Mode: modeOf(rdb)})
}

// NewQueueIn returns the request stream laid out as l.
func NewQueueIn(rdb redis.UniversalClient, l Layout) *Queue {
	l = l.norm()
	return &Queue{rdb: rdb, prefix: l.Prefix + ":", layout: l}
}

// legacyShard names the stream of BobNet before shards in message ids.
const legacyShard = -1

// streamOf is the key of shard n's stream (legacyShard: the old one).
func (q *Queue) streamOf(n int) string {
	if n == legacyShard {
		return legacyStream(q.prefix)
	}
	return streamKey(q.prefix, n)
}

// streams are every shard the queue reads: its own, then those it drains.
func (q *Queue) streams() []int {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]int, 0, q.layout.Streams+len(q.drains)+1)
	for n := range q.layout.Streams {
		out = append(out, n)
	}
	out = append(out, q.drains...)
	return append(out, legacyShard)
}

// messageID is an entry's id as the engine holds it: the stream id and
// its shard, so that Renew and Ack find the stream.
func messageID(shard int, id string) string { return id + "@" + strconv.Itoa(shard) }

// parseMessageID splits a messageID; ok is false for one this queue did
// not make.
func parseMessageID(m string) (shard int, id string, ok bool) {
	id, s, found := strings.Cut(m, "@")
	n, err := strconv.Atoi(s)
	return n, id, found && err == nil
}

// Init creates each shard's consumer group (and stream) if missing and
// finds the streams of an earlier layout to drain.
func (q *Queue) Init(ctx context.Context) error {
	for n := range q.layout.Streams {
		if err := q.initShard(ctx, n); err != nil {
			return err
		}
	}
	return q.findDrains(ctx)
}

func (q *Queue) initShard(ctx context.Context, n int) error {
	err := q.rdb.XGroupCreateMkStream(ctx, q.streamOf(n), group, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		return wrap("create consumer group", err)
	}
	return nil
}

// Read waits up to block for a request for consumer, handed over by a
// shard's reader.
func (q *Queue) Read(ctx context.Context, consumer string, block time.Duration) ([]board.QueuedRequest, error) {
	return q.readersFor(ctx, consumer).take(ctx, consumer, block)
}

// Reclaim takes over a request another consumer read but did not
// acknowledge within idle: its worker died or hangs. It takes one at a
// time (COUNT 1), looking at the shards in turn: the worker leases only
// the request in hand, so a second one taken with it would sit unrenewed
// while the first is planned, be reclaimed by another worker once idle
// and be planned by both.
func (q *Queue) Reclaim(ctx context.Context, consumer string, idle time.Duration) ([]board.QueuedRequest, error) {
	shards := q.streams()
	q.mu.Lock()
	start := q.next
	q.next++
	q.mu.Unlock()
	for i := range shards {
		n := shards[(start+i)%len(shards)]
		out, err := q.reclaimShard(ctx, n, consumer, idle)
		if err != nil || len(out) > 0 {
			return out, err
		}
	}
	return nil, nil
}

func (q *Queue) reclaimShard(ctx context.Context, n int, consumer string, idle time.Duration) ([]board.QueuedRequest, error) {
	stream := q.streamOf(n)
	msgs, _, err := q.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: stream, Group: group, Consumer: consumer, MinIdle: idle, Start: "0-0", Count: 1,
	}).Result()
	if err != nil && strings.Contains(err.Error(), "NOGROUP") {
		if n >= 0 && n < q.layout.Streams {
			return nil, q.initShard(ctx, n)
		}
		return nil, nil // a drained stream that is gone
	}
	if err != nil {
		return nil, wrap("reclaim requests", err)
	}
	out := deliveries(n, msgs)
	for i := range out {
		// XAUTOCLAIM counts the delivery but does not say the count;
		// reclaims are rare, so the extra call is off the usual path.
		_, id, _ := parseMessageID(out[i].MessageID)
		p, err := q.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: stream, Group: group, Start: id, End: id, Count: 1,
		}).Result()
		if err != nil {
			return nil, wrap("reclaim requests: delivery count", err)
		}
		if len(p) == 1 {
			out[i].Count = int(p[0].RetryCount)
		}
	}
	return out, nil
}

// Renew resets the idle time of requests consumer is still working on,
// so Reclaim leaves them alone however long the model takes: a worker's
// lease on a request lasts as long as it keeps renewing. JUSTID keeps the
// delivery count as it is.
func (q *Queue) Renew(ctx context.Context, consumer string, messageIDs []string) error {
	if len(messageIDs) == 0 {
		return nil
	}
	byShard := map[int][]string{}
	for _, m := range messageIDs {
		if n, id, ok := parseMessageID(m); ok {
			byShard[n] = append(byShard[n], id)
		}
	}
	_, err := q.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for n, ids := range byShard {
			pipe.XClaimJustID(ctx, &redis.XClaimArgs{
				Stream: q.streamOf(n), Group: group, Consumer: consumer, MinIdle: 0, Messages: ids,
			})
		}
		return nil
	})
	return wrap("renew requests", err)
}

// Ack acknowledges a handled request and deletes its entry, in one
// MULTI/EXEC on its stream. Without the delete the stream kept every
// request ever queued: an acknowledged entry is never read again, since
// Reclaim only looks at entries still pending.
func (q *Queue) Ack(ctx context.Context, messageID string) error {
	n, id, ok := parseMessageID(messageID)
	if !ok {
		return nil // not an entry of this queue's: nothing to acknowledge
	}
	stream := q.streamOf(n)
	_, err := q.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.XAck(ctx, stream, group, id)
		pipe.XDel(ctx, stream, id)
		return nil
	})
	return wrap("ack request", err)
}

// Len is how many entries the streams hold: waiting or in flight.
func (q *Queue) Len(ctx context.Context) (int64, error) {
	var total int64
	for _, n := range q.streams() {
		l, err := q.rdb.XLen(ctx, q.streamOf(n)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, wrap("queue length", err)
		}
		total += l
	}
	return total, nil
}

func deliveries(shard int, msgs []redis.XMessage) []board.QueuedRequest {
	out := make([]board.QueuedRequest, 0, len(msgs))
	for _, m := range msgs {
		id, _ := m.Values["request"].(string)
		out = append(out, board.QueuedRequest{MessageID: messageID(shard, m.ID), RequestID: board.RequestID(id)})
	}
	return out
}
