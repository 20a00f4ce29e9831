// Package redisstore keeps BobNet's short-lived state in Redis. Its files
// follow the key families of keys.go, which lists every key it writes:
// proposals.go and preview.go (proposals waiting for a decision, with a
// TTL), claims.go (the atomic claim that lets exactly one decision win),
// intake.go and admit.go (request records, dedupe keys and the rate limits
// of taking a request in; durable.go waits for a replica), queue.go and
// readers.go (the request stream's shards and their blocking readers),
// threads.go (thread history), ratelimit.go (the fixed-window rate limits
// of everything else), marks.go, remind.go and home.go (once-only marks,
// reminders, home viewers). layout.go says where keys live and their hash
// tags, connect.go how Redis is reached (single, cluster, sentinel), and
// legacy.go how the keys of before hash tags are upgraded. Its Lua
// scripts are the .lua files beside them; each touches keys of one hash
// slot.
package redisstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// grace is how long a proposal stays readable in Redis after it expires,
// so the sweeper can still announce the expiry and a late click gets
// "expired" rather than "not found".
const grace = time.Hour

// InFlight is the Redis store for proposals and requests. Keys all start with
// its prefix, so several deployments (or tests) can share one Redis.
type InFlight struct {
	rdb    redis.UniversalClient
	prefix string
	layout Layout
	admits *admitter
	floods *floods
	// tags and streams are each stream shard's hash tag and key.
	tags, streams []string
}

// NewInFlight returns a store on rdb with keys under prefix, the request
// stream in the default number of shards for rdb's kind (one, or 16 on a
// cluster).
func NewInFlight(rdb redis.UniversalClient, prefix string) *InFlight {
	return NewInFlightIn(rdb, Layout{Prefix: prefix, Mode: modeOf(rdb)})
}

// NewInFlightIn returns a store on rdb laid out as l.
func NewInFlightIn(rdb redis.UniversalClient, l Layout) *InFlight {
	l = l.norm()
	s := &InFlight{rdb: rdb, prefix: l.Prefix + ":", layout: l, admits: newAdmitter(rdb, durableIn(l.Mode), modeOf(rdb) != ModeCluster), floods: newFloods()}
	// Each shard's tag and stream key, laid out once: admission names
	// them for every request.
	for n := range max(l.Streams, 1) {
		s.tags = append(s.tags, shardTag(n))
		s.streams = append(s.streams, streamKey(s.prefix, n))
	}
	return s
}

// pkey is the key of a proposal's family (proposal, decision, preview,
// claim…), tagged with its id so that all of them share its slot.
func (s *InFlight) pkey(family string, id board.ProposalID) string {
	return s.prefix + family + ":{" + string(id) + "}"
}

// key joins the prefix and parts with ":" in one allocation. (Intake
// names its keys in one string of their own: admitKeys.)
func (s *InFlight) key(parts ...string) string {
	n := len(s.prefix) + len(parts)
	for _, p := range parts {
		n += len(p)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(s.prefix)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(p)
	}
	return b.String()
}

// ordered runs first's commands, then then's: in one pipeline on one
// server (one connection keeps their order), in two round trips on a
// cluster, whose pipelines run each node's commands apart and at once.
// These are not transactions: each key family keeps its own slot, and
// the order is what makes a failure between the two steps harmless (see
// the callers).
func (s *InFlight) ordered(ctx context.Context, first, then func(redis.Pipeliner)) error {
	if s.layout.Mode != ModeCluster {
		_, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			first(pipe)
			then(pipe)
			return nil
		})
		return err
	}
	if _, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error { first(pipe); return nil }); err != nil {
		return err
	}
	_, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error { then(pipe); return nil })
	return err
}

// wrap marks Redis failures as board.ErrUnavailable, so the engine can tell
// the user to try again rather than that something is wrong with the input.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w: redis: %w", op, board.ErrUnavailable, err)
}

// Ping reports whether Redis answers.
func (s *InFlight) Ping(ctx context.Context) error {
	return wrap("ping", s.rdb.Ping(ctx).Err())
}

// keepFor is how long the keys of a proposal expiring at expires live:
// until then and grace after, at least a second.
func keepFor(expires time.Time) time.Duration { return max(time.Until(expires)+grace, time.Second) }

// requestTTL is how long request records, dedupe keys and thread history
// are kept.
const requestTTL = 7 * 24 * time.Hour
