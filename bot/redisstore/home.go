package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// homeViewers names the sorted set of people who opened BobNet's home
// (a Slack App Home), scored by when they last did.
func (s *InFlight) homeViewers(surface string) string { return s.key("home-viewers", surface) }

// maxHomeViewers bounds the viewers kept per surface; the ones who looked
// longest ago drop out first.
const maxHomeViewers = 1000

// AddHomeViewer notes that user opened their home on surface now, so a
// change they would see there can refresh it.
func (s *InFlight) AddHomeViewer(ctx context.Context, surface, user string, now time.Time) error {
	key := s.homeViewers(surface)
	_, err := s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.ZAdd(ctx, key, redis.Z{Score: float64(now.UnixMilli()), Member: user})
		pipe.ZRemRangeByRank(ctx, key, 0, -maxHomeViewers-1)
		pipe.Expire(ctx, key, requestTTL)
		return nil
	})
	return wrap("add home viewer", err)
}

// HomeViewers returns who opened their home on surface since then, most
// recent first, at most limit of them.
func (s *InFlight) HomeViewers(ctx context.Context, surface string, since time.Time, limit int) ([]string, error) {
	users, err := s.rdb.ZRevRangeByScore(ctx, s.homeViewers(surface), &redis.ZRangeBy{
		Min: strconv.FormatInt(since.UnixMilli(), 10), Max: "+inf", Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, wrap("list home viewers", err)
	}
	return users, nil
}
