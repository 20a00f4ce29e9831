package pending_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/pending"
	"github.com/bobnet/bobnet/planner"
)

func newStore(t *testing.T) *pending.Store {
	t.Helper()
	return pending.NewStore(bottest.Redis(t), bottest.Prefix())
}

func TestClaimHasOneWinnerAndCanBeGivenBack(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.Claim(ctx, "p_x", fmt.Sprint("u", i), time.Minute)
			if err != nil {
				t.Error(err)
			}
			if ok {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Fatalf("winners = %d, want 1", n)
	}
	if ok, _ := s.Claim(ctx, "p_x", "late", time.Minute); ok {
		t.Fatal("claimed a held proposal")
	}
	if err := s.Release(ctx, "p_x"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Claim(ctx, "p_x", "retry", time.Minute); err != nil || !ok {
		t.Fatalf("claim after release = %v, %v; want true", ok, err)
	}
}

func TestProposalsAndExpirySchedule(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := time.Now()
	put := func(id string, state bot.ProposalState, expires time.Time) {
		t.Helper()
		if err := s.PutProposal(ctx, bot.Proposal{ID: bot.ProposalID(id), State: state, Version: 1, ExpiresAt: expires}); err != nil {
			t.Fatal(err)
		}
	}
	put("p_due", bot.ProposalPending, now.Add(-time.Second))
	put("p_later", bot.ProposalPending, now.Add(time.Hour))
	put("p_done", bot.ProposalPending, now.Add(-time.Second))
	put("p_done", bot.ProposalApproved, now.Add(-time.Second)) // decided: off the schedule

	due, err := s.DueExpiries(ctx, now, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 1 || due[0] != "p_due" {
		t.Fatalf("due = %v, want [p_due]", due)
	}
	if err := s.RemoveExpiry(ctx, "p_due"); err != nil {
		t.Fatal(err)
	}
	if due, _ := s.DueExpiries(ctx, now, 10); len(due) != 0 {
		t.Fatalf("due after remove = %v", due)
	}
	p, err := s.Proposal(ctx, "p_done")
	if err != nil || p.State != bot.ProposalApproved {
		t.Fatalf("p_done = %+v, %v", p, err)
	}
	if _, err := s.Proposal(ctx, "p_missing"); !errors.Is(err, bot.ErrNotFound) {
		t.Fatalf("missing proposal: err = %v, want ErrNotFound", err)
	}
}

func TestDedupeRateLimitAndAnswered(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()

	if id, first, err := s.Dedupe(ctx, "evt1", "r_1", time.Minute); err != nil || !first || id != "r_1" {
		t.Fatalf("first dedupe = %v %v %v", id, first, err)
	}
	if id, first, err := s.Dedupe(ctx, "evt1", "r_2", time.Minute); err != nil || first || id != "r_1" {
		t.Fatalf("second dedupe = %v %v %v; want r_1, false", id, first, err)
	}

	tests := []struct {
		name  string
		limit bot.RateLimit
		calls int
		want  []bool
	}{
		{"within and over", bot.RateLimit{N: 2, Per: time.Minute}, 3, []bool{true, true, false}},
		{"unlimited", bot.RateLimit{}, 3, []bool{true, true, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.calls {
				ok, err := s.Allow(ctx, "user:"+tc.name, tc.limit)
				if err != nil {
					t.Fatal(err)
				}
				if ok != tc.want[i] {
					t.Fatalf("call %d allowed = %v, want %v", i+1, ok, tc.want[i])
				}
			}
		})
	}

	if first, err := s.MarkAnswered(ctx, "r_1"); err != nil || !first {
		t.Fatalf("first MarkAnswered = %v, %v", first, err)
	}
	if first, _ := s.MarkAnswered(ctx, "r_1"); first {
		t.Fatal("a request was marked answered twice")
	}
}

func TestThreadHistoryIsBounded(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	for i := range 25 {
		if err := s.AppendTurn(ctx, "console:general:t1", planner.Turn{Role: "user", User: "alice", Text: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	turns, err := s.Turns(ctx, "console:general:t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 20 || turns[0].Text != "m5" || turns[19].Text != "m24" {
		t.Fatalf("kept %+v; want the newest 20 (m5..m24)", turns)
	}
}
