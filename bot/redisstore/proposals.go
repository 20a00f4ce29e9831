package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// PutProposal stores a proposal until ttl after its expiry time and puts it
// on the expiry schedule.
func (s *InFlight) PutProposal(ctx context.Context, p board.Proposal) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	// The schedules first: an entry whose proposal is missing (the SET
	// failed) finds nothing to expire or remind, while a pending proposal
	// missing from them would never be announced as expired.
	err = s.ordered(ctx, func(pipe redis.Pipeliner) {
		if p.State == board.ProposalPending {
			pipe.ZAdd(ctx, s.key("expiries"), redis.Z{Score: float64(p.ExpiresAt.UnixMilli()), Member: string(p.ID)})
		} else {
			pipe.ZRem(ctx, s.key("expiries"), string(p.ID))
		}
		s.scheduleReminder(ctx, pipe, p) // remind.go
	}, func(pipe redis.Pipeliner) {
		pipe.Set(ctx, s.pkey("proposal", p.ID), b, keepFor(p.ExpiresAt))
	})
	return wrap("put proposal", err)
}

// Proposal returns a stored proposal; board.ErrNotFound when Redis has none
// (never stored, or gone after its expiry). Deciding is set on a pending
// proposal whose claim is held.
func (s *InFlight) Proposal(ctx context.Context, id board.ProposalID) (board.Proposal, error) {
	vals, err := s.rdb.MGet(ctx, s.proposalKeys(id)...).Result()
	if err != nil {
		return board.Proposal{}, wrap("get proposal", err)
	}
	p, held, err := readProposal(id, vals)
	if errors.Is(err, board.ErrNotFound) {
		if moved, uerr := s.upgradeProposal(ctx, id); uerr != nil || moved {
			if uerr != nil {
				return board.Proposal{}, uerr
			}
			return s.Proposal(ctx, id)
		}
	}
	if err != nil {
		return board.Proposal{}, err
	}
	p.Deciding = held != nil && p.State == board.ProposalPending
	return p, nil
}

// proposalKeys are the keys a proposal is read from, in the order
// readProposal takes their values: the proposal, the message its preview
// was posted as, its decision and its claim.
func (s *InFlight) proposalKeys(id board.ProposalID) []string {
	return []string{s.pkey("proposal", id), s.pkey("preview", id), s.pkey("decision", id), s.pkey("claim", id)}
}

// readProposal builds a proposal from the values of proposalKeys, and
// returns the claim's holder (nil when none holds it) beside it.
// board.ErrNotFound when Redis has no such proposal.
func readProposal(id board.ProposalID, vals []any) (board.Proposal, any, error) {
	raw, ok := vals[0].(string)
	if !ok {
		return board.Proposal{}, nil, fmt.Errorf("proposal %s: %w", id, board.ErrNotFound)
	}
	p, err := decodeProposal(id, raw)
	if err != nil {
		return board.Proposal{}, nil, err
	}
	withPreview(&p, vals[1])
	if err := withDecision(&p, vals[2]); err != nil {
		return board.Proposal{}, nil, err
	}
	return p, vals[3], nil
}

// decision is the part of a proposal its decision changes. It is written
// under its own key (PutDecision): a large plan is a lot of JSON to encode
// and send again for five fields, on the path between an approval and its
// answer.
type decision struct {
	State     board.ProposalState `json:"state"`
	DecidedBy string              `json:"decided_by,omitempty"`
	DecidedAt time.Time           `json:"decided_at,omitzero"`
	BoardID   board.ID            `json:"board_id,omitempty"`
	BoardURL  string              `json:"board_url,omitempty"`
	Reason    string              `json:"reason,omitempty"`
}

// withDecision lays a proposal's recorded decision over it.
func withDecision(p *board.Proposal, raw any) error {
	s, ok := raw.(string)
	if !ok || s == "" {
		return nil
	}
	var d decision
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return fmt.Errorf("proposal %s: decision: %w", p.ID, err)
	}
	p.State, p.DecidedBy, p.DecidedAt, p.BoardID, p.BoardURL, p.Reason = d.State, d.DecidedBy, d.DecidedAt, d.BoardID, d.BoardURL, d.Reason
	return nil
}

// PutDecision records how a proposal was decided (its state, who, when
// and the board) and takes it off the expiry schedule. Proposal and
// ClaimProposal return the proposal with it; a decision is final, so it
// wins over the state PutProposal last wrote.
func (s *InFlight) PutDecision(ctx context.Context, p board.Proposal) error {
	b, err := json.Marshal(decision{State: p.State, DecidedBy: p.DecidedBy, DecidedAt: p.DecidedAt, BoardID: p.BoardID, BoardURL: p.BoardURL, Reason: p.Reason})
	if err != nil {
		return err
	}
	// The decision first: a decided proposal left on a schedule is
	// dropped by the sweeper, which reads its state.
	err = s.ordered(ctx, func(pipe redis.Pipeliner) {
		pipe.Set(ctx, s.pkey("decision", p.ID), b, keepFor(p.ExpiresAt))
	}, func(pipe redis.Pipeliner) {
		pipe.ZRem(ctx, s.key("expiries"), string(p.ID))
		pipe.ZRem(ctx, s.key("reminders"), string(p.ID)) // remind.go
	})
	return wrap("put decision", err)
}

// DueExpiries returns up to limit pending proposals whose expiry time has
// passed.
func (s *InFlight) DueExpiries(ctx context.Context, now time.Time, limit int) ([]board.ProposalID, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.key("expiries"), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, wrap("due expiries", err)
	}
	out := make([]board.ProposalID, len(ids))
	for i, id := range ids {
		out[i] = board.ProposalID(id)
	}
	return out, nil
}

// RemoveExpiry takes a proposal off the expiry schedule.
func (s *InFlight) RemoveExpiry(ctx context.Context, id board.ProposalID) error {
	return wrap("remove expiry", s.rdb.ZRem(ctx, s.key("expiries"), string(id)).Err())
}

// PendingProposals returns up to limit proposals still on the expiry
// schedule, soonest expiry first, read as Proposal reads one. The
// schedule holds exactly the pending proposals (a decision takes its
// proposal off it), so no second index has to be kept in step with it.
// Entries whose proposal Redis no longer has are skipped.
func (s *InFlight) PendingProposals(ctx context.Context, now time.Time, limit int) ([]board.Proposal, error) {
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
		gets[i] = pipe.MGet(ctx, s.proposalKeys(board.ProposalID(id))...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, wrap("read pending proposals", err)
	}
	out := make([]board.Proposal, 0, len(ids))
	for i, id := range ids {
		p, held, err := readProposal(board.ProposalID(id), gets[i].Val())
		if errors.Is(err, board.ErrNotFound) {
			var again error
			p, again = s.Proposal(ctx, board.ProposalID(id)) // kept under the keys of before hash tags?
			err, held = again, nil
			if again == nil && p.Deciding {
				held = true
			}
		}
		if err != nil || p.State != board.ProposalPending {
			continue // gone, unreadable or decided since the range was read
		}
		p.Deciding = held != nil
		out = append(out, p)
	}
	return out, nil
}
