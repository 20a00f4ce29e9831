package bot_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

// slowDecisions is the Redis store whose PutDecision waits until let is
// closed, as when Redis is slow right after an approval committed.
type slowDecisions struct {
	*redisstore.InFlight
	let chan struct{}
}

func (s *slowDecisions) PutDecision(ctx context.Context, p board.Proposal) error {
	select {
	case <-s.let:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.InFlight.PutDecision(ctx, p)
}

// An approval answers before Redis records its decision; every read in
// between already sees it approved (from Postgres), and no second decision
// gets through.
func TestApprovalIsSeenBeforeRedisRecordsIt(t *testing.T) {
	t.Parallel()
	rdb := bottest.Redis(t)
	store := storetest.NewStore(t)
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{Profiles: planner.ProfileNames(planner.DefaultProfiles())})
	if !res.Valid {
		t.Fatalf("newspaper plan invalid: %+v", res.Errors)
	}
	prefix := bottest.Prefix()
	ps := redisstore.NewInFlight(rdb, prefix)
	slow := &slowDecisions{InFlight: ps, let: make(chan struct{})}
	deps := bottest.Deps(stubPlanner{planner.Outcome{Result: res}}, store, ps, redisstore.NewQueue(rdb, prefix))
	deps.Proposals = slow
	eng, err := bot.New(bot.Config{Workers: 1, Profiles: planner.DefaultProfiles(), ProposalTTL: time.Hour, ReclaimIdle: time.Minute, SweepInterval: time.Hour, PublicURL: "http://bobnet.test"},
		deps, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	eng.Register(board.SourceConsole, bot.Registration{Poster: &bottest.Poster{}})
	ctx, env, st := runAndPropose(t, eng, store)
	ap, err := eng.Approve(ctx, st.ProposalID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := ps.Proposal(ctx, st.ProposalID); raw.State != board.ProposalPending || !raw.Deciding {
		t.Fatalf("Redis has %q (deciding %v) before PutDecision; the test needs it still pending", raw.State, raw.Deciding)
	}
	p, err := eng.Proposal(ctx, st.ProposalID)
	if err != nil || p.State != board.ProposalApproved || p.BoardID != ap.BoardID || p.BoardURL != ap.BoardURL || p.DecidedBy != "alice" {
		t.Fatalf("read after the answer: %+v, %v; want approved by alice with board %s", p, err, ap.BoardID)
	}
	var de *bot.DecidedError
	if _, err := eng.Cancel(ctx, st.ProposalID, "alice"); !errors.As(err, &de) || de.State != board.ProposalApproved {
		t.Fatalf("cancel after approve = %v, want already approved", err)
	}
	if _, err := eng.Approve(ctx, st.ProposalID, "alice"); !errors.As(err, &de) || de.State != board.ProposalApproved || de.BoardID != ap.BoardID {
		t.Fatalf("second approve = %v, want already approved with the board", err)
	}

	close(slow.let)
	deadline := time.Now().Add(5 * time.Second)
	for {
		raw, err := ps.Proposal(ctx, st.ProposalID)
		if err == nil && raw.State == board.ProposalApproved && raw.BoardID == ap.BoardID && !raw.Deciding {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis never recorded the approval: %+v, %v", raw, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := count(t, env, "boards"); n != 1 {
		t.Fatalf("%d boards, want 1", n)
	}
}
