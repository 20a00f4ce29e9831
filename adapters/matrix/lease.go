package matrix

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisLease is a Lease in Redis: a key set only when absent, with an
// expiry that the holder renews; a holder that dies stops renewing and the
// key expires, so another replica takes over within the TTL.
type RedisLease struct {
	rdb    redis.UniversalClient
	key    string
	holder string
	ttl    time.Duration
}

// NewRedisLease returns the lease named key, held for ttl between
// renewals. Each RedisLease is one contender.
func NewRedisLease(rdb redis.UniversalClient, key string, ttl time.Duration) *RedisLease {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return &RedisLease{rdb: rdb, key: key, holder: hex.EncodeToString(b), ttl: ttl}
}

// Acquire takes the lease when it is free (or already ours).
func (l *RedisLease) Acquire(ctx context.Context) (bool, error) {
	ok, err := l.rdb.SetNX(ctx, l.key, l.holder, l.ttl).Result()
	if err != nil {
		return false, fmt.Errorf("acquire lease %s: %w", l.key, err)
	}
	if ok {
		return true, nil
	}
	return l.Renew(ctx)
}

// renewScript extends the lease only while we hold it.
var renewScript = &lazy[*redis.Script]{build: func() *redis.Script {
	return redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)
}}

// Renew extends the lease; false when another replica holds it now.
func (l *RedisLease) Renew(ctx context.Context) (bool, error) {
	n, err := renewScript.get().Run(ctx, l.rdb, []string{l.key}, l.holder, l.ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("renew lease %s: %w", l.key, err)
	}
	return n == 1, nil
}

var releaseScript = &lazy[*redis.Script]{build: func() *redis.Script {
	return redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)
}}

// Release frees the lease if we hold it.
func (l *RedisLease) Release(ctx context.Context) error {
	if err := releaseScript.get().Run(ctx, l.rdb, []string{l.key}, l.holder).Err(); err != nil {
		return fmt.Errorf("release lease %s: %w", l.key, err)
	}
	return nil
}
