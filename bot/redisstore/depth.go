package redisstore

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// maxCountedLag bounds how far Depth counts entries one by one when Redis
// cannot say the lag itself.
const maxCountedLag = 10000

// Depth returns how many requests wait in the streams for a worker and how
// many a worker holds but has not finished, across every replica and
// every shard. A stream not created yet is empty.
func (q *Queue) Depth(ctx context.Context) (waiting, inFlight int64, err error) {
	for _, n := range q.streams() {
		w, f, err := q.shardDepth(ctx, q.streamOf(n))
		if err != nil {
			return 0, 0, err
		}
		waiting, inFlight = waiting+w, inFlight+f
	}
	return waiting, inFlight, nil
}

func (q *Queue) shardDepth(ctx context.Context, stream string) (waiting, inFlight int64, err error) {
	groups, err := q.rdb.XInfoGroups(ctx, stream).Result()
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return 0, 0, nil
		}
		return 0, 0, wrap("queue depth", err)
	}
	for _, g := range groups {
		if g.Name != group {
			continue
		}
		waiting = g.Lag
		if waiting < 0 {
			// Redis cannot tell after entries were deleted: count what
			// comes after the last delivered entry.
			msgs, err := q.rdb.XRangeN(ctx, stream, "("+g.LastDeliveredID, "+", maxCountedLag).Result()
			if err != nil && err != redis.Nil {
				return 0, 0, wrap("queue depth", err)
			}
			waiting = int64(len(msgs))
		}
		return waiting, g.Pending, nil
	}
	// No group yet: nothing was ever read, so every entry waits.
	n, err := q.rdb.XLen(ctx, stream).Result()
	return n, 0, wrap("queue depth", err)
}
