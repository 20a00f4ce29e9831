package pending

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/bot/record"
)

// SeenOnce reports whether this is the first time key is seen within ttl;
// adapters use it for platform event ids.
func (s *Store) SeenOnce(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.key("seen", key), 1, ttl).Result()
	return ok, wrap("seen once", err)
}

// Mark sets a flag for ttl.
func (s *Store) Mark(ctx context.Context, key string, ttl time.Duration) error {
	return wrap("mark", s.rdb.Set(ctx, s.key("mark", key), 1, ttl).Err())
}

// Marked reports whether a flag is set.
func (s *Store) Marked(ctx context.Context, key string) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.key("mark", key)).Result()
	return n == 1, wrap("marked", err)
}

// Allow counts one event against limit for key in a fixed window and
// reports whether it is within the limit. Requests are limited by Admit;
// this is for everything else that must not flood (board events).
func (s *Store) Allow(ctx context.Context, key string, limit record.RateLimit) (bool, error) {
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
