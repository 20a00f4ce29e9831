package pending

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/bot"
)

// PendingProposals returns up to limit proposals still on the expiry
// schedule, soonest expiry first, read as Proposal reads one. The
// schedule holds exactly the pending proposals (a decision takes its
// proposal off it), so no second index has to be kept in step with it.
// Entries whose proposal Redis no longer has are skipped.
func (s *Store) PendingProposals(ctx context.Context, now time.Time, limit int) ([]bot.Proposal, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.key("expiries"), &redis.ZRangeBy{
		Min: "(" + strconv.FormatInt(now.UnixMilli(), 10), Max: "+inf", Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, wrap("list pending proposals", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	gets := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		gets[i] = pipe.MGet(ctx, s.proposalKeys(bot.ProposalID(id))...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, wrap("read pending proposals", err)
	}
	out := make([]bot.Proposal, 0, len(ids))
	for i, id := range ids {
		p, held, err := readProposal(bot.ProposalID(id), gets[i].Val())
		if err != nil || p.State != bot.ProposalPending {
			continue // gone, unreadable or decided since the range was read
		}
		p.Deciding = held != nil
		out = append(out, p)
	}
	return out, nil
}

// homeViewers names the sorted set of people who opened BobNet's home
// (a Slack App Home), scored by when they last did.
func (s *Store) homeViewers(surface string) string { return s.key("home-viewers", surface) }

// maxHomeViewers bounds the viewers kept per surface; the ones who looked
// longest ago drop out first.
const maxHomeViewers = 1000

// AddHomeViewer notes that user opened their home on surface now, so a
// change they would see there can refresh it.
func (s *Store) AddHomeViewer(ctx context.Context, surface, user string, now time.Time) error {
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
func (s *Store) HomeViewers(ctx context.Context, surface string, since time.Time, limit int) ([]string, error) {
	users, err := s.rdb.ZRevRangeByScore(ctx, s.homeViewers(surface), &redis.ZRangeBy{
		Min: strconv.FormatInt(since.UnixMilli(), 10), Max: "+inf", Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, wrap("list home viewers", err)
	}
	return users, nil
}
