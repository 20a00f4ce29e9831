package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// Allow counts one event against limit for key in a fixed window and
// reports whether it is within the limit. Requests are limited by Admit;
// this is for everything else that must not flood (board events).
func (s *InFlight) Allow(ctx context.Context, key string, limit board.RateLimit) (bool, error) {
	if limit.N <= 0 || limit.Per <= 0 {
		return true, nil
	}
	k := s.key("rate", key, window(time.Now(), limit.Per))
	var incr *redis.IntCmd
	_, err := s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		incr = pipe.Incr(ctx, k)
		pipe.PExpire(ctx, k, limit.Per)
		return nil
	})
	if err != nil {
		return false, wrap("rate limit", err)
	}
	return incr.Val() <= int64(limit.N), nil
}

// window names the fixed rate-limit window now falls in.
func window(now time.Time, per time.Duration) string {
	return strconv.FormatInt(windowIndex(now, per), 10)
}

// windowIndex numbers the fixed rate-limit window now falls in.
func windowIndex(now time.Time, per time.Duration) int64 {
	if per <= 0 {
		return 0
	}
	return now.UnixMilli() / per.Milliseconds()
}
