// Package pending keeps BobNet's short-lived state in Redis: proposals
// waiting for a decision (with a TTL), the atomic claim that lets exactly one
// decision win, request records, dedupe keys, rate limits, thread history
// and the request stream.
package pending

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/planner"
)

// grace is how long a proposal stays readable in Redis after it expires,
// so the sweeper can still announce the expiry and a late click gets
// "expired" rather than "not found".
const grace = time.Hour

// Store is the Redis store for proposals and requests. Keys all start with
// its prefix, so several deployments (or tests) can share one Redis.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewStore returns a store on rdb with keys under prefix.
func NewStore(rdb redis.UniversalClient, prefix string) *Store {
	return &Store{rdb: rdb, prefix: prefix + ":"}
}

func (s *Store) key(parts ...string) string {
	k := s.prefix
	for i, p := range parts {
		if i > 0 {
			k += ":"
		}
		k += p
	}
	return k
}

// wrap marks Redis failures as bot.ErrUnavailable, so the engine can tell
// the user to try again rather than that something is wrong with the input.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w: redis: %w", op, bot.ErrUnavailable, err)
}

// Ping reports whether Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	return wrap("ping", s.rdb.Ping(ctx).Err())
}

// PutProposal stores a proposal until ttl after its expiry time and puts it
// on the expiry schedule.
func (s *Store) PutProposal(ctx context.Context, p bot.Proposal) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	ttl := time.Until(p.ExpiresAt) + grace
	_, err = s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, s.key("proposal", string(p.ID)), b, ttl)
		if p.State == bot.ProposalPending {
			pipe.ZAdd(ctx, s.key("expiries"), redis.Z{Score: float64(p.ExpiresAt.UnixMilli()), Member: string(p.ID)})
		} else {
			pipe.ZRem(ctx, s.key("expiries"), string(p.ID))
		}
		return nil
	})
	return wrap("put proposal", err)
}

// Proposal returns a stored proposal; bot.ErrNotFound when Redis has none
// (never stored, or gone after its expiry).
func (s *Store) Proposal(ctx context.Context, id bot.ProposalID) (bot.Proposal, error) {
	b, err := s.rdb.Get(ctx, s.key("proposal", string(id))).Bytes()
	if errors.Is(err, redis.Nil) {
		return bot.Proposal{}, fmt.Errorf("proposal %s: %w", id, bot.ErrNotFound)
	}
	if err != nil {
		return bot.Proposal{}, wrap("get proposal", err)
	}
	var p bot.Proposal
	if err := json.Unmarshal(b, &p); err != nil {
		return bot.Proposal{}, fmt.Errorf("proposal %s: %w", id, err)
	}
	return p, nil
}

// Claim takes the proposal's decision lock for holder. Exactly one caller
// gets true until the lock is released or ttl passes; that caller alone may
// change the proposal's state.
func (s *Store) Claim(ctx context.Context, id bot.ProposalID, holder string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.key("claim", string(id)), holder, ttl).Result()
	return ok, wrap("claim proposal", err)
}

// Release gives a claim back, so a decision that failed can be retried.
func (s *Store) Release(ctx context.Context, id bot.ProposalID) error {
	return wrap("release proposal", s.rdb.Del(ctx, s.key("claim", string(id))).Err())
}

// DueExpiries returns up to limit pending proposals whose expiry time has
// passed.
func (s *Store) DueExpiries(ctx context.Context, now time.Time, limit int) ([]bot.ProposalID, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.key("expiries"), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, wrap("due expiries", err)
	}
	out := make([]bot.ProposalID, len(ids))
	for i, id := range ids {
		out[i] = bot.ProposalID(id)
	}
	return out, nil
}

// RemoveExpiry takes a proposal off the expiry schedule.
func (s *Store) RemoveExpiry(ctx context.Context, id bot.ProposalID) error {
	return wrap("remove expiry", s.rdb.ZRem(ctx, s.key("expiries"), string(id)).Err())
}

// requestTTL is how long request records, dedupe keys and thread history
// are kept.
const requestTTL = 7 * 24 * time.Hour

// PutRequest stores a request record.
func (s *Store) PutRequest(ctx context.Context, r bot.RequestRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return wrap("put request", s.rdb.Set(ctx, s.key("request", string(r.Request.ID)), b, requestTTL).Err())
}

// Request returns a request record; bot.ErrNotFound when there is none.
func (s *Store) Request(ctx context.Context, id bot.RequestID) (bot.RequestRecord, error) {
	b, err := s.rdb.Get(ctx, s.key("request", string(id))).Bytes()
	if errors.Is(err, redis.Nil) {
		return bot.RequestRecord{}, fmt.Errorf("request %s: %w", id, bot.ErrNotFound)
	}
	if err != nil {
		return bot.RequestRecord{}, wrap("get request", err)
	}
	var r bot.RequestRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return bot.RequestRecord{}, fmt.Errorf("request %s: %w", id, err)
	}
	return r, nil
}

// Dedupe records that key maps to id. For a key seen before it returns the
// first id and false.
func (s *Store) Dedupe(ctx context.Context, key string, id bot.RequestID, ttl time.Duration) (bot.RequestID, bool, error) {
	k := s.key("dedupe", key)
	ok, err := s.rdb.SetNX(ctx, k, string(id), ttl).Result()
	if err != nil {
		return "", false, wrap("dedupe", err)
	}
	if ok {
		return id, true, nil
	}
	first, err := s.rdb.Get(ctx, k).Result()
	if err != nil {
		return "", false, wrap("dedupe", err)
	}
	return bot.RequestID(first), false, nil
}

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
// reports whether it is within the limit.
func (s *Store) Allow(ctx context.Context, key string, limit bot.RateLimit) (bool, error) {
	if limit.N <= 0 || limit.Per <= 0 {
		return true, nil
	}
	window := time.Now().UnixMilli() / limit.Per.Milliseconds()
	k := s.key("rate", key, strconv.FormatInt(window, 10))
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

// MarkAnswered records that a request's reply is going out; it returns
// false when it already was, so a reclaimed request is answered once.
func (s *Store) MarkAnswered(ctx context.Context, id bot.RequestID) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.key("answered", string(id)), 1, requestTTL).Result()
	return ok, wrap("mark answered", err)
}

// maxTurns is how many earlier messages of a thread are kept for prompts.
const maxTurns = 20

// AppendTurn adds a message to a thread's history.
func (s *Store) AppendTurn(ctx context.Context, thread string, t planner.Turn) error {
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
func (s *Store) Turns(ctx context.Context, thread string) ([]planner.Turn, error) {
	items, err := s.rdb.LRange(ctx, s.key("thread", thread), 0, -1).Result()
	if err != nil {
		return nil, wrap("turns", err)
	}
	out := make([]planner.Turn, 0, len(items))
	for _, it := range items {
		var t planner.Turn
		if json.Unmarshal([]byte(it), &t) == nil {
			out = append(out, t)
		}
	}
	return out, nil
}
