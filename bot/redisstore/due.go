package redisstore

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"
)

// A due set holds work that falls due later and that any replica may do,
// each member taken by one at a time: the Slack adapter's late looks at a
// thread for a draft left beside its answer, should the replica that
// answered die first. It is one sorted set (due:<set>) by the time each
// falls due; a member taken falls due again when its lease ends, until
// it is dropped as done.

func (s *InFlight) dueKey(set string) string { return s.key("due", set) }

// AddDue puts member in set, due at at.
func (s *InFlight) AddDue(ctx context.Context, set, member string, at time.Time) error {
	err := s.rdb.ZAdd(ctx, s.dueKey(set), redis.Z{Score: float64(at.UnixMilli()), Member: member}).Err()
	return wrap("add due", err)
}

// DropDue takes member out of set: done.
func (s *InFlight) DropDue(ctx context.Context, set, member string) error {
	return wrap("drop due", s.rdb.ZRem(ctx, s.dueKey(set), member).Err())
}

// TakeDue takes at most n members of set due by now, for lease: of
// callers at once, each member goes to one, and it falls due again when
// the lease ends unless dropped (DropDue) by then.
func (s *InFlight) TakeDue(ctx context.Context, set string, now time.Time, n int, lease time.Duration) ([]string, error) {
	due, err := takeDueScript.Run(ctx, s.rdb, []string{s.dueKey(set)}, now.UnixMilli(), n, now.Add(lease).UnixMilli()).StringSlice()
	if err == redis.Nil {
		return nil, nil
	}
	return due, wrap("take due", err)
}

var takeDueScript = redis.NewScript(takeDueSource)

//go:embed due_take.lua
var takeDueSource string
