package redisstore

import (
	"context"
	"time"
)

// SeenOnce reports whether this is the first time key is seen within ttl;
// adapters use it for platform event ids.
func (s *InFlight) SeenOnce(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.key("seen", key), 1, ttl).Result()
	return ok, wrap("seen once", err)
}

// Mark sets a flag for ttl.
func (s *InFlight) Mark(ctx context.Context, key string, ttl time.Duration) error {
	return wrap("mark", s.rdb.Set(ctx, s.key("mark", key), 1, ttl).Err())
}

// Marked reports whether a flag is set.
func (s *InFlight) Marked(ctx context.Context, key string) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.key("mark", key)).Result()
	return n == 1, wrap("marked", err)
}
