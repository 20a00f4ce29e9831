package bot_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
)

// sink records emitted events.
type sink struct {
	mu  sync.Mutex
	evs []bot.Event
}

func (s *sink) Emit(_ context.Context, ev bot.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
	return nil
}

func (s *sink) types() []bot.EventType {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []bot.EventType
	for _, ev := range s.evs {
		out = append(out, ev.Type)
	}
	return out
}

func TestEventsOfApproveCancelAndExpire(t *testing.T) {
	t.Parallel()
	s := &sink{}
	env := bottest.New(t, bottest.WithDeps(func(d *bot.Deps) { d.Events = bot.Events{Sink: s} }), bottest.WithConfig(func(c *bot.Config) { c.ProposalTTL = time.Hour }))
	answerNewspaper(t, env)
	ctx := context.Background()

	p := propose(t, env, "alice")
	a, err := env.Engine.Approve(ctx, p.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	want := []bot.EventType{bot.EventProposalCreated, bot.EventProposalApproved, bot.EventBoardCreated}
	if got := s.types(); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	if last := s.evs[2]; last.BoardID != a.BoardID || last.BoardURL != a.BoardURL || last.Actor != "alice" || last.Channel() != "console:general" {
		t.Fatalf("board.created = %+v", last)
	}
	// A second approval changes nothing and emits nothing.
	if _, err := env.Engine.Approve(ctx, p.ID, "alice"); !errors.Is(err, bot.ErrAlreadyDecided) {
		t.Fatalf("second approve: %v", err)
	}
	p2 := propose(t, env, "alice")
	if _, err := env.Engine.Cancel(ctx, p2.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	want = append(want, bot.EventProposalCreated, bot.EventProposalCancelled)
	if got := s.types(); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

func TestEventsOfExpiry(t *testing.T) {
	t.Parallel()
	s := &sink{}
	env := bottest.New(t, bottest.WithDeps(func(d *bot.Deps) { d.Events = bot.Events{Sink: s} }), bottest.WithConfig(func(c *bot.Config) { c.ProposalTTL = time.Second }))
	answerNewspaper(t, env)
	propose(t, env, "alice")
	want := []bot.EventType{bot.EventProposalCreated, bot.EventProposalExpired}
	deadline := time.Now().Add(20 * time.Second)
	for !slices.Equal(s.types(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("events = %v, want %v", s.types(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestChannelDecidersAndVia(t *testing.T) {
	t.Parallel()
	env := bottest.New(t, bottest.WithConfig(func(c *bot.Config) { c.ChannelDeciders = map[string][]string{"console:general": {"bob"}} }))
	answerNewspaper(t, env)
	ctx := context.Background()
	p := propose(t, env, "hook:github")
	if _, err := env.Engine.Approve(ctx, p.ID, "carol"); !errors.Is(err, bot.ErrForbidden) {
		t.Fatalf("carol, no decider of the channel, approved: %v", err)
	}
	if got := env.Engine.ChannelDeciders("console:general"); !slices.Equal(got, []string{"bob"}) {
		t.Fatalf("deciders = %v", got)
	}
	if _, err := env.Engine.Approve(bot.WithVia(ctx, "token:ci"), p.ID, "bob"); err != nil {
		t.Fatalf("a channel decider could not approve: %v", err)
	}
	evs, err := env.Store.Audit(ctx, board.AuditFilter{ProposalID: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range evs {
		if ev.Action != "approved" {
			continue
		}
		var d map[string]any
		_ = json.Unmarshal(ev.Detail, &d)
		found = ev.Actor == "bob" && d["via"] == "token:ci"
	}
	if !found {
		t.Fatalf("audit has no approval by bob via token:ci: %+v", evs)
	}
}
