package redisstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// group is the stream's consumer group: every engine replica reads from it,
// each request going to one of them.
const group = "engine"

// Queue is the request stream. An entry stays pending in the consumer
// group until it is acknowledged, so a request whose worker died is found
// again by Reclaim.
type Queue struct {
	rdb    redis.UniversalClient
	stream string
}

// NewQueue returns the request stream under prefix.
func NewQueue(rdb redis.UniversalClient, prefix string) *Queue {
	return &Queue{rdb: rdb, stream: prefix + ":requests"}
}

// Init creates the consumer group (and the stream) if missing.
func (q *Queue) Init(ctx context.Context) error {
	err := q.rdb.XGroupCreateMkStream(ctx, q.stream, group, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		return wrap("create consumer group", err)
	}
	return nil
}

// Read waits up to block for new requests for consumer.
func (q *Queue) Read(ctx context.Context, consumer string, block time.Duration) ([]board.QueuedRequest, error) {
	streams, err := q.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: group, Consumer: consumer, Streams: []string{q.stream, ">"}, Count: 1, Block: block,
	}).Result()
	if err != nil && strings.Contains(err.Error(), "NOGROUP") {
		if err := q.Init(ctx); err != nil {
			return nil, err
		}
		return nil, nil
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("read requests", err)
	}
	var out []board.QueuedRequest
	for _, s := range streams {
		out = append(out, deliveries(s.Messages)...)
	}
	for i := range out {
		out[i].Count = 1 // read with ">": never handed out before
	}
	return out, nil
}

// Reclaim takes over a request another consumer read but did not
// acknowledge within idle: its worker died or hangs. It takes one at a
// time (COUNT 1): the worker leases only the request in hand, so a second
// one taken with it would sit unrenewed while the first is planned, be
// reclaimed by another worker once idle and be planned by both.
func (q *Queue) Reclaim(ctx context.Context, consumer string, idle time.Duration) ([]board.QueuedRequest, error) {
	msgs, _, err := q.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: q.stream, Group: group, Consumer: consumer, MinIdle: idle, Start: "0-0", Count: 1,
	}).Result()
	if err != nil && strings.Contains(err.Error(), "NOGROUP") {
		return nil, q.Init(ctx)
	}
	if err != nil {
		return nil, wrap("reclaim requests", err)
	}
	out := deliveries(msgs)
	for i := range out {
		// XAUTOCLAIM counts the delivery but does not say the count;
		// reclaims are rare, so the extra call is off the usual path.
		p, err := q.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: q.stream, Group: group, Start: out[i].MessageID, End: out[i].MessageID, Count: 1,
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
	err := q.rdb.XClaimJustID(ctx, &redis.XClaimArgs{
		Stream: q.stream, Group: group, Consumer: consumer, MinIdle: 0, Messages: messageIDs,
	}).Err()
	return wrap("renew requests", err)
}

// Ack acknowledges a handled request and deletes its entry, in one
// MULTI/EXEC. Without the delete the stream kept every request ever
// queued: an acknowledged entry is never read again, since Reclaim only
// looks at entries still pending.
func (q *Queue) Ack(ctx context.Context, messageID string) error {
	_, err := q.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.XAck(ctx, q.stream, group, messageID)
		pipe.XDel(ctx, q.stream, messageID)
		return nil
	})
	return wrap("ack request", err)
}

func deliveries(msgs []redis.XMessage) []board.QueuedRequest {
	out := make([]board.QueuedRequest, 0, len(msgs))
	for _, m := range msgs {
		id, _ := m.Values["request"].(string)
		out = append(out, board.QueuedRequest{MessageID: m.ID, RequestID: board.RequestID(id)})
	}
	return out
}
