package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// A request's showing is how a surface shows it while it is planned: the
// thread status it set, the placeholder or streamed message the answer
// replaces, and that the answer went out. It is one hash per request,
// named with the request's hash tag ({r:<id>}) so every replica reads the
// same one: the replica that acknowledged the mention sets the status,
// the worker's replica streams the draft and posts the answer.

// showingKey is request id's showing hash.
func (s *InFlight) showingKey(id board.RequestID) string {
	return s.key("showing", "{r:"+string(id)+"}")
}

// ShowingSet sets fields of request id's showing; the hash lives ttl
// from now.
func (s *InFlight) ShowingSet(ctx context.Context, id board.RequestID, fields map[string]string, ttl time.Duration) error {
	key := s.showingKey(id)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, fields)
		p.Expire(ctx, key, ttl)
		return nil
	})
	return wrap("set showing", err)
}

// ShowingClaim sets field of request id's showing to value unless it is
// set already, and reports whether it set it, with the showing as the
// claim left it; the fields of with (nil for none) are set in the same
// round trip, whoever wins. The hash lives ttl from now. Of several
// replicas claiming one field, one wins.
func (s *InFlight) ShowingClaim(ctx context.Context, id board.RequestID, field, value string, with map[string]string, ttl time.Duration) (bool, map[string]string, error) {
	key := s.showingKey(id)
	var set *redis.BoolCmd
	var all *redis.MapStringStringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if len(with) > 0 {
			p.HSet(ctx, key, with)
		}
		set = p.HSetNX(ctx, key, field, value)
		p.Expire(ctx, key, ttl)
		all = p.HGetAll(ctx, key)
		return nil
	})
	if err != nil {
		return false, nil, wrap("claim showing", err)
	}
	return set.Val(), all.Val(), nil
}

// Showing is request id's showing, field by field; empty when nothing was
// shown (or it expired).
func (s *InFlight) Showing(ctx context.Context, id board.RequestID) (map[string]string, error) {
	m, err := s.rdb.HGetAll(ctx, s.showingKey(id)).Result()
	return m, wrap("read showing", err)
}

// A thread streams one request's draft at a time: the request that holds
// its stream. A replica that dies between Slack making a streamed message
// and recording its ts leaves a message no record names, and a stream
// carries no metadata; while its request holds the thread's stream, that
// message is the thread's one unfinished stream, which the request's
// answer can then find.

// streamHoldKey is thread t's stream hold.
func (s *InFlight) streamHoldKey(t board.Thread) string {
	return s.key("stream-hold", t.Channel.ID, t.ID)
}

// HoldStream makes request id the one streaming a draft in thread t for
// ttl, unless another request is: true when id holds it (again).
func (s *InFlight) HoldStream(ctx context.Context, t board.Thread, id board.RequestID, ttl time.Duration) (bool, error) {
	key := s.streamHoldKey(t)
	won, err := s.rdb.SetNX(ctx, key, string(id), ttl).Result()
	if err != nil || won {
		return won, wrap("hold stream", err)
	}
	holder, err := s.rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil // let go in between: the caller does without
	}
	return holder == string(id), wrap("hold stream", err)
}

// ReleaseStream ends request id's hold of thread t's stream; a hold
// another request took (after id's ran out) is left.
func (s *InFlight) ReleaseStream(ctx context.Context, t board.Thread, id board.RequestID) error {
	return wrap("release stream", releaseScript.Run(ctx, s.rdb, []string{s.streamHoldKey(t)}, string(id)).Err())
}
