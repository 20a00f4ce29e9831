package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// The reminder schedule is a sorted set of pending proposals by the time
// they remind their deciders (board.Proposal.RemindAt), written in the same
// transaction as the proposal and cleared by its decision, beside the
// expiry schedule; "reminded:<id>" is the once-mark that lets one replica
// send a proposal's reminder.

// scheduleReminder puts a pending proposal on the reminder schedule in
// pipe, and takes any other off it.
func (s *InFlight) scheduleReminder(ctx context.Context, pipe redis.Pipeliner, p board.Proposal) {
	at := p.RemindAt()
	if p.State != board.ProposalPending || at.IsZero() {
		pipe.ZRem(ctx, s.key("reminders"), string(p.ID))
		return
	}
	pipe.ZAdd(ctx, s.key("reminders"), redis.Z{Score: float64(at.UnixMilli()), Member: string(p.ID)})
}

// DueReminders returns up to limit proposals whose reminder is due at now.
func (s *InFlight) DueReminders(ctx context.Context, now time.Time, limit int) ([]board.ProposalID, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.key("reminders"), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, wrap("due reminders", err)
	}
	out := make([]board.ProposalID, len(ids))
	for i, id := range ids {
		out[i] = board.ProposalID(id)
	}
	return out, nil
}

// RemoveReminder takes a proposal off the reminder schedule.
func (s *InFlight) RemoveReminder(ctx context.Context, id board.ProposalID) error {
	return wrap("remove reminder", s.rdb.ZRem(ctx, s.key("reminders"), string(id)).Err())
}

// MarkReminded sets a proposal's once-mark for ttl (its remaining life)
// with SET NX, and reports whether this call set it: of any number of
// replicas asking at once, one gets true.
func (s *InFlight) MarkReminded(ctx context.Context, id board.ProposalID, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.pkey("reminded", id), 1, max(ttl, time.Second)).Result()
	return ok, wrap("mark reminded", err)
}
