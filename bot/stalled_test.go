package bot_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

// shortClaim is the claim TTL of these tests: a stalled approval outlives
// it many times over.
const shortClaim = 300 * time.Millisecond

// slowPath is one way an approval executes, with a lock that stalls it
// after it took its chain's lock.
type slowPath struct {
	name string
	// propose makes the proposal to approve, in general, by alice.
	propose func(t *testing.T, env *bottest.Env) board.Proposal
	stall   string
}

var slowPaths = []slowPath{
	// A new board is written in one batch; bobnet_board_key's table is
	// read inside it, after the check (a locked cards table would stall
	// the batch while its statements are prepared, before it begins).
	{name: "one batch", stall: `LOCK TABLE board_keys IN ACCESS EXCLUSIVE MODE`, propose: func(t *testing.T, env *bottest.Env) board.Proposal {
		answerNewspaper(t, env)
		return propose(t, env, "alice")
	}},
	// Changes to the channel's board are read and decided in Go.
	{name: "careful", stall: `LOCK TABLE cards IN ACCESS EXCLUSIVE MODE`, propose: func(t *testing.T, env *bottest.Env) board.Proposal {
		approvedNewspaper(t, env)
		env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: v2Plan} })
		id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: "mark the research cards done and add a fact-check step"})
		if err != nil {
			t.Fatal(err)
		}
		st := env.WaitRequest(t, id)
		p, err := env.Engine.Proposal(context.Background(), st.ProposalID)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}},
}

// decisions are the events that say how a proposal ended.
func decisions(s *sink, id board.ProposalID) []bot.EventType {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []bot.EventType
	for _, ev := range s.evs {
		if ev.Proposal.ID == id && ev.Type != bot.EventProposalCreated && ev.Type != bot.EventBoardCreated {
			out = append(out, ev.Type)
		}
	}
	return out
}

// Cancel beside an approval stalled in Postgres past the claim's TTL, on
// both execution paths, with the approver's claim kept (renewed) and with
// it lost (Redis forgot it): exactly one of them wins, the other hears
// that the proposal was decided, and one decision event goes out.
func TestCancelBesideASlowApprove(t *testing.T) {
	t.Parallel()
	for _, path := range slowPaths {
		for _, lose := range []bool{false, true} {
			name := path.name + "/claim kept"
			if lose {
				name = path.name + "/claim lost"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := &sink{}
				env := bottest.New(t, bottest.WithDeps(func(d *bot.Deps) { d.Events = bot.Events{Sink: s} }), bottest.WithConfig(func(c *bot.Config) { c.ClaimTTL = shortClaim }))
				ctx := context.Background()
				p := path.propose(t, env)
				boardsBefore, cardsBefore := count(t, env, "boards"), count(t, env, "cards")
				release := storetest.Stall(t, env.Store, path.stall)
				type result struct {
					a   board.Approval
					err error
				}
				approved := make(chan result, 1)
				go func() {
					a, err := env.Engine.Approve(ctx, p.ID, "alice")
					approved <- result{a, err}
				}()
				storetest.WaitLockWaiters(t, env.Store, 1, nil)
				time.Sleep(3 * shortClaim)
				if lose {
					if err := env.Redis.Del(ctx, env.Prefix+":claim:{"+string(p.ID)+"}").Err(); err != nil {
						t.Fatal(err)
					}
				}
				cancelled := make(chan error, 1)
				go func() {
					_, err := env.Engine.Cancel(ctx, p.ID, "alice")
					cancelled <- err
				}()
				if lose {
					// The cancel now holds the claim and waits for the
					// approval on the chain's lock (or, wrongly, returns).
					select {
					case err := <-cancelled:
						cancelled <- err
					case <-time.After(2 * time.Second):
					}
				} else {
					// The approver renews its claim while it works: the
					// cancel hears at once that it is being decided.
					select {
					case err := <-cancelled:
						var de *bot.DecidedError
						if !errors.As(err, &de) || de.State != "being decided" {
							t.Errorf("cancel during the approval = %v, want being decided", err)
						}
						cancelled <- err
					case <-time.After(2 * time.Second):
						t.Errorf("cancel waited for a claim its approver keeps")
					}
				}
				release()
				a, cerr := <-approved, <-cancelled
				rec, err := env.Store.Proposal(ctx, p.ID)
				if err != nil {
					t.Fatal(err)
				}
				boards, cards := count(t, env, "boards"), count(t, env, "cards")
				evs := decisions(s, p.ID)
				switch {
				case a.err == nil && cerr == nil:
					t.Fatalf("both won: approved (board %s) and cancelled; Postgres says %s", a.a.BoardID, rec.State)
				case a.err == nil:
					if !errors.Is(cerr, bot.ErrAlreadyDecided) || rec.State != "approved" || rec.BoardID != a.a.BoardID || (boards == boardsBefore && cards == cardsBefore) {
						t.Fatalf("approval won; cancel = %v, Postgres %s, %d new boards, %d new cards", cerr, rec.State, boards-boardsBefore, cards-cardsBefore)
					}
					if len(evs) != 1 || evs[0] != bot.EventProposalApproved {
						t.Fatalf("decision events = %v, want the approval alone", evs)
					}
				case cerr == nil:
					if !errors.Is(a.err, bot.ErrAlreadyDecided) || rec.State != "cancelled" || boards != boardsBefore || cards != cardsBefore {
						t.Fatalf("cancel won; approve = %v, Postgres %s, %d new boards, %d new cards", a.err, rec.State, boards-boardsBefore, cards-cardsBefore)
					}
					if len(evs) != 1 || evs[0] != bot.EventProposalCancelled {
						t.Fatalf("decision events = %v, want the cancel alone", evs)
					}
				default:
					t.Fatalf("neither won: approve %v, cancel %v", a.err, cerr)
				}
				// Redis ends up saying what Postgres says.
				deadline := time.Now().Add(5 * time.Second)
				for {
					got, err := env.Engine.Proposal(ctx, p.ID)
					if err == nil && string(got.State) == rec.State {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("engine says %q (%v), Postgres %q", got.State, err, rec.State)
					}
					time.Sleep(20 * time.Millisecond)
				}
			})
		}
	}
}

// The sweeper meets a proposal whose time ran out while its approval was
// stalled in Postgres: with the approver's claim kept or lost, the
// approval, which began in time, stands and no expiry is recorded.
func TestExpiryBesideASlowApprove(t *testing.T) {
	t.Parallel()
	for _, lose := range []bool{false, true} {
		name := "claim kept"
		if lose {
			name = "claim lost"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const ttl = 2 * time.Second
			s := &sink{}
			env := bottest.New(t, bottest.WithDeps(func(d *bot.Deps) { d.Events = bot.Events{Sink: s} }), bottest.WithConfig(func(c *bot.Config) { c.ClaimTTL, c.ProposalTTL = shortClaim, ttl }))
			ctx := context.Background()
			answerNewspaper(t, env)
			p := propose(t, env, "alice")
			release := storetest.Stall(t, env.Store, slowPaths[0].stall)
			approved := make(chan error, 1)
			go func() {
				_, err := env.Engine.Approve(ctx, p.ID, "alice")
				approved <- err
			}()
			storetest.WaitLockWaiters(t, env.Store, 1, nil)
			if lose {
				if err := env.Redis.Del(ctx, env.Prefix+":claim:{"+string(p.ID)+"}").Err(); err != nil {
					t.Fatal(err)
				}
			}
			// Past the expiry, the sweeper (every 50 ms) has tried it.
			time.Sleep(time.Until(p.ExpiresAt) + 500*time.Millisecond)
			release()
			if err := <-approved; err != nil {
				t.Fatalf("approve: %v", err)
			}
			env.WaitIdle(t)
			time.Sleep(200 * time.Millisecond) // a sweep in flight ends
			rec, err := env.Store.Proposal(ctx, p.ID)
			if err != nil || rec.State != "approved" || count(t, env, "boards") != 1 {
				t.Fatalf("Postgres: %+v, %v, %d boards; want approved with one board", rec.State, err, count(t, env, "boards"))
			}
			if evs := decisions(s, p.ID); len(evs) != 1 || evs[0] != bot.EventProposalApproved {
				t.Fatalf("decision events = %v, want the approval alone", evs)
			}
			if got := actions(t, env, board.AuditFilter{Channel: "console:general"}); slices.Contains(got, "expired") {
				t.Fatalf("audit = %v: an expiry was recorded beside the approval", got)
			}
		})
	}
}

// A revision of a proposal whose approval is stalled in Postgres past the
// claim's TTL, with the approver's claim kept or lost: the approval stands,
// the first version is never recorded superseded, and a second version, if
// the revision made one, cannot be approved beside it.
func TestRevisionBesideASlowApprove(t *testing.T) {
	t.Parallel()
	for _, lose := range []bool{false, true} {
		name := "claim kept"
		if lose {
			name = "claim lost"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := bottest.New(t, bottest.WithConfig(func(c *bot.Config) { c.ClaimTTL = shortClaim }))
			ctx := context.Background()
			answerNewspaper(t, env)
			v1 := propose(t, env, "alice")
			release := storetest.Stall(t, env.Store, slowPaths[0].stall)
			approved := make(chan error, 1)
			go func() {
				_, err := env.Engine.Approve(ctx, v1.ID, "alice")
				approved <- err
			}()
			storetest.WaitLockWaiters(t, env.Store, 1, nil)
			time.Sleep(3 * shortClaim)
			if lose {
				if err := env.Redis.Del(ctx, env.Prefix+":claim:{"+string(v1.ID)+"}").Err(); err != nil {
					t.Fatal(err)
				}
			}
			rid, err := env.Engine.Revise(ctx, v1.ID, "alice", "add an archive")
			if err != nil {
				t.Fatal(err)
			}
			// The revision's worker claims v1 (when it can) and waits for
			// the approval on the chain's lock, or, wrongly, goes ahead.
			deadline := time.Now().Add(2 * time.Second)
			for time.Now().Before(deadline) {
				if st, _ := env.Engine.Request(ctx, rid); st.State == board.RequestDone {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			release()
			if err := <-approved; err != nil {
				t.Fatalf("approve v1: %v", err)
			}
			st := env.WaitRequest(t, rid)
			rec, err := env.Store.Proposal(ctx, v1.ID)
			if err != nil || rec.State != "approved" || count(t, env, "boards") != 1 {
				t.Fatalf("v1 in Postgres: %s, %v; %d boards", rec.State, err, count(t, env, "boards"))
			}
			if got := actions(t, env, board.AuditFilter{ProposalID: v1.ID}); slices.Contains(got, "superseded") {
				t.Fatalf("v1's audit = %v: superseded beside its approval", got)
			}
			deadline = time.Now().Add(5 * time.Second)
			for {
				p, err := env.Engine.Proposal(ctx, v1.ID)
				if err == nil && p.State == board.ProposalApproved {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("engine says v1 is %q (%v), Postgres approved", p.State, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if st.ProposalID != "" {
				if _, err := env.Engine.Approve(ctx, st.ProposalID, "alice"); !errors.Is(err, bot.ErrAlreadyDecided) {
					t.Fatalf("approve v2 beside the approved v1: %v", err)
				}
			}
			if n := count(t, env, "boards"); n != 1 {
				t.Fatalf("%d boards, want 1", n)
			}
		})
	}
}

// A withdrawal beside the approval that completed the quorum, stalled in
// Postgres past the claim's TTL, with the approver's claim kept or lost: the
// board is made on both approvals and the withdrawal is refused.
func TestWithdrawBesideASlowApprove(t *testing.T) {
	t.Parallel()
	for _, lose := range []bool{false, true} {
		name := "claim kept"
		if lose {
			name = "claim lost"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := bottest.New(t, bottest.WithConfig(func(c *bot.Config) { c.ClaimTTL = shortClaim }))
			ctx := context.Background()
			answerNewspaper(t, env)
			setPolicy(t, env, "console:general", board.Policy{Deciders: []string{"bob", "carol"}, Approvals: 2})
			p := propose(t, env, "alice")
			if _, err := env.Engine.Approve(ctx, p.ID, "bob"); err != nil {
				t.Fatal(err)
			}
			release := storetest.Stall(t, env.Store, slowPaths[0].stall)
			type result struct {
				a   board.Approval
				err error
			}
			approved := make(chan result, 1)
			go func() {
				a, err := env.Engine.Approve(ctx, p.ID, "carol")
				approved <- result{a, err}
			}()
			storetest.WaitLockWaiters(t, env.Store, 1, nil)
			time.Sleep(3 * shortClaim)
			if lose {
				if err := env.Redis.Del(ctx, env.Prefix+":claim:{"+string(p.ID)+"}").Err(); err != nil {
					t.Fatal(err)
				}
			}
			withdrawn := make(chan error, 1)
			go func() {
				_, err := env.Engine.Withdraw(ctx, p.ID, "bob")
				withdrawn <- err
			}()
			select {
			case err := <-withdrawn:
				withdrawn <- err
			case <-time.After(2 * time.Second):
			}
			release()
			a, werr := <-approved, <-withdrawn
			approvals, err := env.Store.Approvals(ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			if a.err != nil || a.a.BoardID == "" || !errors.Is(werr, bot.ErrAlreadyDecided) || !slices.Equal(approvals, []string{"bob", "carol"}) {
				t.Fatalf("carol = %+v, %v; bob's withdrawal = %v; approvals %v: want the board on both approvals and the withdrawal refused", a.a, a.err, werr, approvals)
			}
		})
	}
}

// An approval committed in Postgres whose decision never reached Redis (its
// replica crashed just after the commit, and its claim ran out): a cancel
// then loses Postgres's compare-and-set, hears that the proposal was
// approved, and Redis is given the approval, so the proposal is not offered
// as pending again.
func TestLostCloseGivesRedisTheWinner(t *testing.T) {
	t.Parallel()
	s := &sink{}
	env := bottest.New(t, bottest.WithDeps(func(d *bot.Deps) { d.Events = bot.Events{Sink: s} }), bottest.WithConfig(func(c *bot.Config) { c.ClaimTTL = shortClaim }))
	ctx := context.Background()
	answerNewspaper(t, env)
	p := propose(t, env, "alice")
	res, err := env.Store.Execute(ctx, board.Execution{ProposalID: p.ID, Chain: p.ChainID(), Channel: p.Thread.Channel.Key(), ApprovedBy: "alice", Plan: p.Plan})
	if err != nil {
		t.Fatal(err)
	}
	var de *bot.DecidedError
	if _, err := env.Engine.Cancel(ctx, p.ID, "alice"); !errors.As(err, &de) || de.State != board.ProposalApproved || de.BoardID != res.BoardID {
		t.Fatalf("cancel after an approval Redis never heard of = %v, want approved with board %s", err, res.BoardID)
	}
	time.Sleep(2 * shortClaim) // every claim has run out
	got, err := env.Engine.Proposal(ctx, p.ID)
	if err != nil || got.State != board.ProposalApproved || got.BoardID != res.BoardID {
		t.Fatalf("proposal after the lost cancel = %s (board %s), %v; want approved", got.State, got.BoardID, err)
	}
	if evs := decisions(s, p.ID); len(evs) != 0 {
		t.Fatalf("decision events = %v, want none from the losing cancel", evs)
	}
}
