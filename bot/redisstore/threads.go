package redisstore

import (
	"context"
	"encoding/json"

	"github.com/bobnet/bobnet/plan"
	"github.com/redis/go-redis/v9"
)

// maxTurns is how many earlier messages of a thread are kept for prompts.
const maxTurns = 20

// AppendTurn adds a message to a thread's history.
func (s *InFlight) AppendTurn(ctx context.Context, thread string, t plan.Turn) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	k := s.key("thread", thread)
	_, err = s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.RPush(ctx, k, b)
		pipe.LTrim(ctx, k, -maxTurns, -1)
		pipe.Expire(ctx, k, requestTTL)
		return nil
	})
	return wrap("append turn", err)
}

// Turns returns a thread's history, oldest first.
func (s *InFlight) Turns(ctx context.Context, thread string) ([]plan.Turn, error) {
	items, err := s.rdb.LRange(ctx, s.key("thread", thread), 0, -1).Result()
	if err != nil {
		return nil, wrap("turns", err)
	}
	out := make([]plan.Turn, 0, len(items))
	for _, it := range items {
		var t plan.Turn
		if json.Unmarshal([]byte(it), &t) == nil {
			out = append(out, t)
		}
	}
	return out, nil
}
