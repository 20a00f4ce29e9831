package bot_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

// clock is a test's engine clock: it stands still until the test moves
// it, so a reminder falls due without waiting for a real TTL.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// withClock makes the engine read time from c.
func withClock(c *clock) bottest.Option { return bottest.WithDeps(func(d *bot.Deps) { d.Now = c.Now }) }

// withAdmins makes root an admin.
var withAdmins = bottest.WithConfig(func(c *bot.Config) { c.Admins = []string{"root"} })

// reminders are the reminder lines among a poster's replies.
func reminders(p *bottest.Poster) []bottest.PostedReply {
	replies, _, _ := p.Snapshot()
	var out []bottest.PostedReply
	for _, r := range replies {
		if strings.HasPrefix(r.Reply.Text, "Reminder for ") {
			out = append(out, r)
		}
	}
	return out
}

// waitEmpty waits until the reminder schedule has nothing left.
func waitEmpty(t *testing.T, env *bottest.Env) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		n, err := env.Redis.ZCard(context.Background(), env.Prefix+":reminders").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the reminder schedule never emptied")
}

func TestReminderSentOnceAcrossThreeReplicas(t *testing.T) {
	t.Parallel()
	clk := newClock()
	store, rdb, prefix, model := storetest.NewStore(t), bottest.Redis(t), bottest.Prefix(), plannertest.NewServer(t)
	var envs []*bottest.Env
	for range 3 {
		envs = append(envs, bottest.New(t, bottest.WithStore(store), bottest.WithRedis(rdb, prefix), bottest.WithModel(model), withClock(clk), withAdmins, bottest.WithConfig(func(c *bot.Config) { c.SweepInterval = 10 * time.Millisecond })))
	}
	answerNewspaper(t, envs[0])
	p := propose(t, envs[0], "alice")
	if want := p.CreatedAt.Add(45 * time.Minute); !p.RemindAt().Equal(want) {
		t.Fatalf("remind at %v, want %v (three quarters of an hour)", p.RemindAt(), want)
	}
	// Short of three quarters of its life, nobody is reminded.
	clk.Add(44 * time.Minute)
	for _, env := range envs {
		env.WaitIdle(t)
	}
	time.Sleep(100 * time.Millisecond) // ten sweeps of each replica
	for i, env := range envs {
		if got := reminders(env.Poster); len(got) != 0 {
			t.Fatalf("replica %d reminded early: %+v", i, got)
		}
	}
	clk.Add(2 * time.Minute)
	waitEmpty(t, envs[0])
	time.Sleep(100 * time.Millisecond) // ten more sweeps of each replica
	var all []bottest.PostedReply
	for _, env := range envs {
		all = append(all, reminders(env.Poster)...)
	}
	if len(all) != 1 {
		t.Fatalf("reminders = %+v, want exactly one across the replicas", all)
	}
	want := "Reminder for alice, root: “Daily Research Newspaper” is still waiting for a decision and expires in 14m."
	if r := all[0]; r.Thread != general || !strings.HasPrefix(r.Reply.Text, want) {
		t.Fatalf("reminder = %+v, want %q in %v", r, want, general)
	}
	if ttl := rdb.PTTL(context.Background(), prefix+":reminded:{"+string(p.ID)+"}").Val(); ttl <= 0 || ttl > 15*time.Minute {
		t.Errorf("once-mark lives %v, want the proposal's remaining life", ttl)
	}
}

func TestProposalDecidedBeforeItsReminderIsNeverReminded(t *testing.T) {
	t.Parallel()
	clk := newClock()
	env := bottest.New(t, withClock(clk), withAdmins)
	answerNewspaper(t, env)
	ctx := context.Background()
	cancelled := propose(t, env, "alice")
	waiting := propose(t, env, "bob")
	if _, err := env.Engine.CancelWithReason(ctx, cancelled.ID, "alice", "not now"); err != nil {
		t.Fatal(err)
	}
	if err := env.Redis.ZScore(ctx, env.Prefix+":reminders", string(cancelled.ID)).Err(); err == nil {
		t.Fatal("a cancelled proposal is still on the reminder schedule")
	}
	clk.Add(50 * time.Minute)
	waitEmpty(t, env)
	env.Poster.WaitFor(t, "bob's reminder", func(replies []bottest.PostedReply, _, _ []board.Proposal) bool {
		for _, r := range replies {
			if strings.HasPrefix(r.Reply.Text, "Reminder for ") {
				return true
			}
		}
		return false
	})
	time.Sleep(10 * 50 * time.Millisecond) // ten sweeps
	got := reminders(env.Poster)
	if len(got) != 1 || !strings.HasPrefix(got[0].Reply.Text, "Reminder for bob, root:") {
		t.Fatalf("reminders = %+v, want only %s's", got, waiting.ID)
	}
}

// ordered is a poster that keeps one log of everything in the order it
// was posted, and reminds through RemindPoster. gate, when set, holds the
// first reply that matches it until released.
type ordered struct {
	mu   sync.Mutex
	log  []string // "remind <id>", "update <id> <state>", "reply <text>"
	hold func(board.Reply) bool
	gate chan struct{}
	held chan struct{}
}

func (o *ordered) add(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.log = append(o.log, s)
}

func (o *ordered) Log() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.log...)
}

func (o *ordered) Reply(_ context.Context, _ board.Thread, r board.Reply) error {
	o.mu.Lock()
	hold := o.hold != nil && o.hold(r)
	if hold {
		o.hold = nil
	}
	o.mu.Unlock()
	if hold {
		close(o.held)
		<-o.gate
	}
	o.add("reply " + r.Text)
	return nil
}

func (o *ordered) PostPreview(_ context.Context, p board.Proposal) (board.MessageRef, error) {
	o.add("preview " + string(p.ID))
	return board.MessageRef("msg-" + string(p.ID)), nil
}

func (o *ordered) UpdatePreview(_ context.Context, p board.Proposal) error {
	o.add("update " + string(p.ID) + " " + string(p.State))
	return nil
}

func (o *ordered) Remind(_ context.Context, r bot.Reminder) error {
	o.add("remind " + string(r.Proposal.ID))
	return nil
}

func (o *ordered) waitFor(t *testing.T, entry string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range o.Log() {
			if e == entry {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never posted %q; log %q", entry, o.Log())
}

func index(log []string, entry string) int {
	for i, e := range log {
		if e == entry {
			return i
		}
	}
	return -1
}

// A cancel racing the reminder: each proposal is cancelled just as its
// reminder falls due. Whichever wins, no reminder is posted after the
// cancel was announced in its channel.
func TestReminderNeverFollowsARacingDecision(t *testing.T) {
	t.Parallel()
	clk := newClock()
	poster := &ordered{}
	env := bottest.New(t, withClock(clk), bottest.WithConsole(bot.Registration{Poster: poster, Reminders: poster}), bottest.WithConfig(func(c *bot.Config) { c.SweepInterval = time.Millisecond }))
	answerNewspaper(t, env)
	ctx := context.Background()
	var ps []board.Proposal
	for i := range 12 {
		ps = append(ps, propose(t, env, fmt.Sprintf("user%d", i)))
	}
	clk.Add(46 * time.Minute)
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i%4) * time.Millisecond)
			if _, err := env.Engine.Cancel(ctx, p.ID, p.RequestedBy); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	waitEmpty(t, env)
	reminded := 0
	for _, p := range ps {
		poster.waitFor(t, "update "+string(p.ID)+" cancelled")
	}
	time.Sleep(50 * time.Millisecond) // fifty sweeps
	log := poster.Log()
	for _, p := range ps {
		r, c := index(log, "remind "+string(p.ID)), index(log, "update "+string(p.ID)+" cancelled")
		if r > c {
			t.Errorf("%s reminded after its cancel was announced: %q", p.ID, log)
		}
		if r >= 0 {
			reminded++
		}
	}
	t.Logf("%d of %d proposals were reminded before their cancel", reminded, len(ps))
}

// A decision that lands after the once-mark was set, while the reminder
// waits on its channel's queue, stops the reminder: the state is read
// again when it is sent.
func TestDecisionAfterTheMarkStopsTheReminder(t *testing.T) {
	t.Parallel()
	clk := newClock()
	poster := &ordered{gate: make(chan struct{}), held: make(chan struct{})}
	env := bottest.New(t, withClock(clk), bottest.WithConsole(bot.Registration{Poster: poster, Reminders: poster}))
	answerNewspaper(t, env)
	ctx := context.Background()
	first := propose(t, env, "alice")
	blocker := propose(t, env, "bob")
	// The blocker's cancel line holds the channel's queue.
	poster.mu.Lock()
	poster.hold = func(r board.Reply) bool { return strings.HasPrefix(r.Text, "Cancelled by bob") }
	poster.mu.Unlock()
	if _, err := env.Engine.CancelWithReason(ctx, blocker.ID, "bob", "wrong week"); err != nil {
		t.Fatal(err)
	}
	<-poster.held
	clk.Add(46 * time.Minute)
	mark := env.Prefix + ":reminded:{" + string(first.ID) + "}"
	for deadline := time.Now().Add(20 * time.Second); env.Redis.Exists(ctx, mark).Val() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the reminder was never taken")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := env.Engine.Cancel(ctx, first.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	close(poster.gate)
	poster.waitFor(t, "update "+string(first.ID)+" cancelled")
	if log := poster.Log(); index(log, "remind "+string(first.ID)) >= 0 {
		t.Fatalf("reminded after the cancel: %q", log)
	}
}

func TestCancelWithReason(t *testing.T) {
	t.Parallel()
	s := &sink{}
	env := bottest.New(t, bottest.WithDeps(func(d *bot.Deps) { d.Events = bot.Events{Sink: s} }))
	answerNewspaper(t, env)
	ctx := context.Background()
	p := propose(t, env, "alice")
	if _, err := env.Engine.CancelWithReason(ctx, p.ID, "alice", strings.Repeat("x", bot.MaxCancelReason+1)); !errors.Is(err, bot.ErrReasonTooLong) {
		t.Fatalf("a long reason: %v", err)
	}
	c, err := env.Engine.CancelWithReason(ctx, p.ID, "alice", "  budget moved\nto Q3 <b>  ")
	if err != nil || c.State != board.ProposalCancelled || c.Reason != "budget moved to Q3 <b>" {
		t.Fatalf("cancel = %+v, %v", c, err)
	}
	env.Poster.WaitFor(t, "the cancel line", func(replies []bottest.PostedReply, _, updates []board.Proposal) bool {
		return len(replies) > 0 && replies[len(replies)-1].Reply.Text == "Cancelled by alice: budget moved to Q3 <b>" &&
			len(updates) == 1 && updates[0].Reason == "budget moved to Q3 <b>"
	})
	evs, err := env.Store.Audit(ctx, board.AuditFilter{ProposalID: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	var detail map[string]any
	if last := evs[len(evs)-1]; last.Action != "cancelled" || json.Unmarshal(last.Detail, &detail) != nil || detail["reason"] != "budget moved to Q3 <b>" {
		t.Fatalf("audit = %+v", evs)
	}
	s.mu.Lock()
	last := s.evs[len(s.evs)-1]
	s.mu.Unlock()
	if last.Type != bot.EventProposalCancelled || last.Proposal.Reason != "budget moved to Q3 <b>" {
		t.Fatalf("event = %+v", last)
	}
	if got, err := env.Engine.Proposal(ctx, p.ID); err != nil || got.Reason != "budget moved to Q3 <b>" {
		t.Fatalf("proposal read back = %q, %v", got.Reason, err)
	}
}
