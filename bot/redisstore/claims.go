package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// Claim takes the proposal's decision lock for holder. Exactly one caller
// gets true until the lock is released or ttl passes; that caller alone may
// change the proposal's state.
func (s *InFlight) Claim(ctx context.Context, id board.ProposalID, holder string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.pkey("claim", id), holder, ttl).Result()
	return ok, wrap("claim proposal", err)
}

// ClaimProposal takes the proposal's decision lock for holder, like Claim,
// and returns the proposal as it is under the lock (or, when someone else
// holds it, as it is now). board.ErrNotFound when Redis has no such proposal;
// then nothing is claimed.
//
// The lock and the read are one MULTI/EXEC, one round trip, rather than a
// Lua script: a script copies the whole proposal into Lua and back, which
// for a large plan costs more than the round trip itself. MULTI takes the lock
// even for a proposal Redis does not have; it is given back at once.
func (s *InFlight) ClaimProposal(ctx context.Context, id board.ProposalID, holder string, ttl time.Duration) (board.Proposal, bool, error) {
	var lock *redis.BoolCmd
	var vals *redis.SliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		lock = pipe.SetNX(ctx, s.pkey("claim", id), holder, max(ttl, time.Millisecond))
		vals = pipe.MGet(ctx, s.proposalKeys(id)...)
		return nil
	})
	if err != nil {
		return board.Proposal{}, false, wrap("claim proposal", err)
	}
	claimed := lock.Val()
	p, held, err := readProposal(id, vals.Val())
	if err != nil {
		if claimed {
			_ = s.Release(ctx, id, holder)
		}
		if errors.Is(err, board.ErrNotFound) {
			// Kept under the keys of before hash tags: moved, then
			// claimed under the new ones.
			if moved, uerr := s.upgradeProposal(ctx, id); uerr == nil && moved {
				return s.ClaimProposal(ctx, id, holder, ttl)
			}
		}
		return board.Proposal{}, false, err
	}
	if !claimed {
		p.ClaimHolder, _ = held.(string)
	}
	return p, claimed, nil
}

// Release gives holder's claim back, so a decision that failed can be
// retried. A claim someone else holds (holder's own ran out and another
// took it) is left: board.ErrNotHolder.
func (s *InFlight) Release(ctx context.Context, id board.ProposalID, holder string) error {
	return s.ifHolder(ctx, releaseScript, "release proposal", id, holder)
}

// RenewClaim extends holder's claim to ttl from now, while its decision is
// still working. board.ErrNotHolder when holder no longer holds it.
func (s *InFlight) RenewClaim(ctx context.Context, id board.ProposalID, holder string, ttl time.Duration) error {
	return s.ifHolder(ctx, renewScript, "renew claim", id, holder, max(ttl, time.Millisecond).Milliseconds())
}

func (s *InFlight) ifHolder(ctx context.Context, script *redis.Script, op string, id board.ProposalID, holder string, args ...any) error {
	n, err := script.Run(ctx, s.rdb, []string{s.pkey("claim", id)}, append([]any{holder}, args...)...).Int()
	if err != nil {
		return wrap(op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s %s: %w", op, id, board.ErrNotHolder)
	}
	return nil
}

// releaseScript and renewScript compare the claim's holder and change the
// claim in one step, so neither touches a claim taken by someone else
// after the caller's ran out. They return 1 when the caller held it.
var (
	releaseScript = redis.NewScript(releaseSource)
	renewScript   = redis.NewScript(renewSource)
)

var (
	//go:embed claim_release.lua
	releaseSource string
	//go:embed claim_renew.lua
	renewSource string
)
