package redisstore

import (
	"context"
	_ "embed"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// The chat messages that show work in progress, so that whichever replica
// speaks next finds them: a request's draft (bot.Drafter), which its
// answer replaces, and a run's progress (bot.RunShower). A surface keeps
// them here rather than in memory because the worker that drew a draft may
// die and another replica answer the request, and a run's cards move on
// whichever replica works them.
//
// A draft's key carries the request's hash tag ({r:<id>}), so in a Redis
// Cluster it sits in the request's slot. Both live as long as a request
// record (requestTTL): an answer or a run's end seldom comes later, and
// one that does posts a message of its own rather than finding the old
// one.

// draftKey is the hash that records a request's draft: field "message" is
// the message it was posted as, "answer" what it became.
func (s *InFlight) draftKey(req board.RequestID) string {
	return s.key("draft", "{r:"+string(req)+"}")
}

// ClaimDraftMessage records ref as the message request's draft was posted
// as, unless another was recorded first, and returns the one kept: a
// caller that gets another ref back removes its own message and uses that
// one.
func (s *InFlight) ClaimDraftMessage(ctx context.Context, req board.RequestID, ref board.MessageRef) (board.MessageRef, error) {
	if ref == "" {
		return "", errors.New("claim draft message: no message")
	}
	key := s.draftKey(req)
	var kept *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSetNX(ctx, key, "message", string(ref))
		p.Expire(ctx, key, requestTTL)
		kept = p.HGet(ctx, key, "message")
		return nil
	})
	if err != nil {
		return "", wrap("claim draft message", err)
	}
	return board.MessageRef(kept.Val()), nil
}

// DraftMessage returns the message request's draft was posted as (empty
// when none was) and what it became (empty while it is a draft).
func (s *InFlight) DraftMessage(ctx context.Context, req board.RequestID) (ref board.MessageRef, answer string, err error) {
	vals, err := s.rdb.HMGet(ctx, s.draftKey(req), "message", "answer").Result()
	if err != nil {
		return "", "", wrap("get draft message", err)
	}
	m, _ := vals[0].(string)
	a, _ := vals[1].(string)
	return board.MessageRef(m), a, nil
}

// SetDraftAnswer records what request's draft became (a preview, a
// reply), so a later answer of another kind does not overwrite it. A
// request with no draft recorded keeps none.
func (s *InFlight) SetDraftAnswer(ctx context.Context, req board.RequestID, answer string) error {
	key := s.draftKey(req)
	// The script is made here, not when the program starts: most
	// deployments never draw a draft, and a package's start-up code
	// stays resident (docs/operations.md).
	_, err := redis.NewScript(setDraftAnswerSource).Run(ctx, s.rdb, []string{key}, answer).Result()
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	return wrap("set draft answer", err)
}

// setDraftAnswerSource sets the answer only on a draft that exists, so a
// draft key that ran out is not brought back without its message.
//
//go:embed draft_answer.lua
var setDraftAnswerSource string

// ClaimRunProgressMessage records ref as the message run's progress is
// shown in, unless another was recorded first, and returns the one kept.
func (s *InFlight) ClaimRunProgressMessage(ctx context.Context, run board.RunID, ref board.MessageRef) (board.MessageRef, error) {
	if ref == "" {
		return "", errors.New("claim run progress message: no message")
	}
	key := s.key("run-progress", string(run))
	var kept *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SetNX(ctx, key, string(ref), requestTTL)
		kept = p.Get(ctx, key)
		return nil
	})
	if err != nil {
		return "", wrap("claim run progress message", err)
	}
	return board.MessageRef(kept.Val()), nil
}

// RunProgressMessage returns the message run's progress is shown in,
// empty when there is none yet.
func (s *InFlight) RunProgressMessage(ctx context.Context, run board.RunID) (board.MessageRef, error) {
	ref, err := s.rdb.Get(ctx, s.key("run-progress", string(run))).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return board.MessageRef(ref), wrap("get run progress message", err)
}
