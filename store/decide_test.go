package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

func cardBatch() plan.Envelope {
	return plan.Envelope{Kind: plan.KindProposeActions, Actions: []plan.Action{{
		Type: plan.ActionCreateCardBatch,
		Cards: []plan.CardDraft{
			{TempID: "a", Title: "Add RSS feed", Body: "Publish an RSS feed of each edition.", Status: "Backlog", WorkspaceMode: "Direct"},
			{TempID: "b", Title: "Announce the feed", Body: "Tell readers.", Status: "Backlog", WorkspaceMode: "Direct"},
		},
		Links: []plan.Link{{Card: "b", DependsOn: "a"}},
	}}}
}

// decisionPath is one way an approval is executed: in one batch, or read
// first and decided in Go (a plan adding to the channel's board, or a
// proposal Postgres has no record of). Each path's setUp gives channel c a
// board first.
type decisionPath struct {
	name string
	plan func(t testing.TB) plan.Envelope
	// record says whether p_x is recorded as pending.
	record bool
	// stall is a lock that holds the execution after it took the chain's
	// lock. A table locked before the batch is sent stalls the one-batch
	// path before it begins (preparing its statements waits), so it
	// holds the channel's binding instead, which the batch writes late.
	stall string
}

const (
	stallBinding = `SELECT 1 FROM channel_bindings WHERE channel = 'c' FOR UPDATE`
	stallCards   = `LOCK TABLE cards IN ACCESS EXCLUSIVE MODE`
)

var decisionPaths = []decisionPath{
	{name: "one batch", plan: newspaper, record: true, stall: stallBinding},
	{name: "careful: cards for the channel's board", plan: func(testing.TB) plan.Envelope { return cardBatch() }, record: true, stall: stallCards},
	{name: "careful: unrecorded proposal", plan: newspaper, record: false, stall: stallBinding},
}

// setUpPath gives channel c a board, prepares p_x for path and returns its
// plan and the number of cards before it executes.
func setUpPath(t *testing.T, s *store.Store, path decisionPath) (plan.Envelope, int) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Execute(ctx, board.Execution{ProposalID: "p_board", Channel: "c", Plan: newspaper(t)}); err != nil {
		t.Fatal(err)
	}
	if path.record {
		if err := s.SaveProposal(ctx, board.ProposalRecord{ID: "p_x", Channel: "c", RequestedBy: "alice", Plan: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	return path.plan(t), count(t, s, `SELECT count(*) FROM cards`)
}

type outcome struct{ err error }

// A cancellation (or expiry, or supersession) arriving while an approval's
// transaction is stalled waits for it on the chain's lock, then finds the
// proposal approved: exactly one of them wins, on every path.
func TestCloseWaitsForAStalledApproval(t *testing.T) {
	t.Parallel()
	for _, path := range decisionPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			s := storetest.NewStore(t)
			ctx := context.Background()
			plan, before := setUpPath(t, s, path)
			release := storetest.Stall(t, s, path.stall)
			approved := make(chan outcome, 1)
			go func() {
				_, err := s.Execute(ctx, board.Execution{ProposalID: "p_x", Channel: "c", ApprovedBy: "alice", Plan: plan})
				approved <- outcome{err}
			}()
			storetest.WaitLockWaiters(t, s, 1, nil)
			cancelled := make(chan outcome, 1)
			cancelDone := make(chan struct{})
			go func() {
				defer close(cancelDone)
				cancelled <- outcome{s.SetProposalState(ctx, board.ProposalRecord{ID: "p_x", Channel: "c"}, "cancelled", "bob")}
			}()
			storetest.WaitLockWaiters(t, s, 2, cancelDone)
			release()
			a, c := <-approved, <-cancelled
			state := proposalState(t, s, "p_x")
			cards := count(t, s, `SELECT count(*) FROM cards`)
			switch {
			case a.err == nil && c.err == nil:
				t.Fatalf("both won: approved and cancelled; state %q, %d cards", state, cards-before)
			case a.err == nil:
				if !errors.Is(c.err, board.ErrProposalClosed) || state != "approved" || cards == before {
					t.Fatalf("approval won; cancel = %v, state %q, %d new cards", c.err, state, cards-before)
				}
			case c.err == nil:
				if !errors.Is(a.err, board.ErrProposalClosed) || state != "cancelled" || cards != before {
					t.Fatalf("cancel won; approve = %v, state %q, %d new cards", a.err, state, cards-before)
				}
			default:
				t.Fatalf("neither won: approve %v, cancel %v", a.err, c.err)
			}
		})
	}
}

// An approval arriving while a cancellation's transaction is stalled (the
// proposal's row locked elsewhere) waits on the chain's lock and then
// finds it cancelled: no board.
func TestApprovalWaitsForAStalledClose(t *testing.T) {
	t.Parallel()
	for _, path := range decisionPaths {
		if !path.record {
			continue // no row to stall on; TestCloseOfAnUnrecordedProposal
		}
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			s := storetest.NewStore(t)
			ctx := context.Background()
			plan, before := setUpPath(t, s, path)
			release := storetest.Stall(t, s, `SELECT 1 FROM proposals WHERE id = 'p_x' FOR UPDATE`)
			cancelled := make(chan outcome, 1)
			go func() {
				cancelled <- outcome{s.SetProposalState(ctx, board.ProposalRecord{ID: "p_x", Channel: "c"}, "cancelled", "bob")}
			}()
			storetest.WaitLockWaiters(t, s, 1, nil)
			approved := make(chan outcome, 1)
			go func() {
				_, err := s.Execute(ctx, board.Execution{ProposalID: "p_x", Channel: "c", ApprovedBy: "alice", Plan: plan})
				approved <- outcome{err}
			}()
			storetest.WaitLockWaiters(t, s, 2, nil)
			release()
			a, c := <-approved, <-cancelled
			state := proposalState(t, s, "p_x")
			cards := count(t, s, `SELECT count(*) FROM cards`)
			if c.err != nil || !errors.Is(a.err, board.ErrProposalClosed) || state != "cancelled" || cards != before {
				t.Fatalf("cancel = %v, approve = %v, state %q, %d new cards; want the cancel alone", c.err, a.err, state, cards-before)
			}
		})
	}
}

// A write of the state by a session that took no chain lock (a replica
// running an older BobNet) between an approval's check and its write is
// not overwritten: the approval's write is a compare-and-set and the
// whole execution rolls back.
func TestExecutionDoesNotOverwriteAClosedState(t *testing.T) {
	t.Parallel()
	for _, path := range decisionPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			s := storetest.NewStore(t)
			ctx := context.Background()
			plan, before := setUpPath(t, s, path)
			release := storetest.Stall(t, s, path.stall)
			approved := make(chan outcome, 1)
			go func() {
				_, err := s.Execute(ctx, board.Execution{ProposalID: "p_x", Channel: "c", ApprovedBy: "alice", Plan: plan})
				approved <- outcome{err}
			}()
			storetest.WaitLockWaiters(t, s, 1, nil)
			close := `UPDATE proposals SET state = 'cancelled', decided_by = 'old', decided_at = now() WHERE id = 'p_x' AND state = 'pending'`
			if !path.record {
				close = `INSERT INTO proposals (id, state, decided_by, decided_at, chain) VALUES ('p_x', 'cancelled', 'old', now(), 'p_x')`
			}
			if _, err := s.Pool().Exec(ctx, close); err != nil {
				t.Fatal(err)
			}
			release()
			a := <-approved
			state := proposalState(t, s, "p_x")
			cards := count(t, s, `SELECT count(*) FROM cards`)
			if !errors.Is(a.err, board.ErrProposalClosed) || state != "cancelled" || cards != before {
				t.Fatalf("approve = %v, state %q, %d new cards; want it refused and the proposal cancelled", a.err, state, cards-before)
			}
		})
	}
}

// Closing a proposal Postgres has no record of records it closed, so an
// approval arriving later finds it closed instead of executing it.
func TestCloseOfAnUnrecordedProposal(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	if err := s.SetProposalState(ctx, board.ProposalRecord{ID: "p_u", Chain: "p_u", Channel: "c", RequestedBy: "alice", Version: 1}, "cancelled", "bob"); err != nil {
		t.Fatal(err)
	}
	p, err := s.Proposal(ctx, "p_u")
	if err != nil || p.State != "cancelled" || p.DecidedBy != "bob" || p.RequestedBy != "alice" || p.Channel != "c" {
		t.Fatalf("record = %+v, %v", p, err)
	}
	if _, err := s.Execute(ctx, board.Execution{ProposalID: "p_u", Channel: "c", Plan: newspaper(t)}); !errors.Is(err, board.ErrProposalClosed) {
		t.Fatalf("approve after the cancel: %v", err)
	}
	if n := count(t, s, `SELECT count(*) FROM boards`); n != 0 {
		t.Fatalf("boards = %d", n)
	}
}

// A withdrawal arriving while the approval completing the quorum is
// stalled waits for it on the chain's lock and is refused, rather than
// taking back an approval the board was made on.
func TestWithdrawWaitsForAStalledApproval(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	if _, err := s.Execute(ctx, board.Execution{ProposalID: "p_board", Channel: "c", Plan: newspaper(t)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveProposal(ctx, board.ProposalRecord{ID: "p_q", Channel: "c", RequestedBy: "alice", Plan: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"bob", "carol"} {
		if _, err := s.AddApproval(ctx, board.ApprovalChange{ProposalID: "p_q", User: u, Channel: "c"}); err != nil {
			t.Fatal(err)
		}
	}
	release := storetest.Stall(t, s, stallBinding)
	approved := make(chan outcome, 1)
	go func() {
		_, err := s.Execute(ctx, board.Execution{ProposalID: "p_q", Channel: "c", ApprovedBy: "carol", Plan: newspaper(t)})
		approved <- outcome{err}
	}()
	storetest.WaitLockWaiters(t, s, 1, nil)
	withdrawn := make(chan outcome, 1)
	withdrawDone := make(chan struct{})
	go func() {
		defer close(withdrawDone)
		_, err := s.WithdrawApproval(ctx, board.ApprovalChange{ProposalID: "p_q", User: "bob", Channel: "c"})
		withdrawn <- outcome{err}
	}()
	storetest.WaitLockWaiters(t, s, 2, withdrawDone)
	release()
	a, w := <-approved, <-withdrawn
	approvals, err := s.Approvals(ctx, "p_q")
	if err != nil {
		t.Fatal(err)
	}
	if a.err != nil || !errors.Is(w.err, board.ErrProposalClosed) || !slices.Equal(approvals, []string{"bob", "carol"}) {
		t.Fatalf("approve = %v, withdraw = %v, approvals %v; want the board made on bob's and carol's approvals and the withdrawal refused", a.err, w.err, approvals)
	}
}

func proposalState(t *testing.T, s *store.Store, id board.ProposalID) string {
	t.Helper()
	p, err := s.Proposal(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return p.State
}

// TestCloseWritesItsEventsWithIt: a cancel's outbound events are written
// in the cancel's own transaction: there when it commits, absent when it
// loses to another decision.
func TestCloseWritesItsEventsWithIt(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	ev := func(id string) []board.OutboundEvent {
		return []board.OutboundEvent{{MsgID: "msg_" + id, Type: "proposal.cancelled", Endpoints: []string{"https://hooks.example.com/x"}, Body: []byte(`{}`)}}
	}
	count := func(id string) int {
		var n int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM event_outbox WHERE msg_id = $1`, "msg_"+id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := s.SetProposalState(ctx, board.ProposalRecord{ID: "p_ev1", Channel: "c", Events: ev("p_ev1")}, "cancelled", "bob"); err != nil {
		t.Fatal(err)
	}
	if n := count("p_ev1"); n != 1 {
		t.Fatalf("events written with the cancel: %d", n)
	}
	// Closed already: the second close loses, and writes no event.
	if err := s.SetProposalState(ctx, board.ProposalRecord{ID: "p_ev1", Channel: "c", Events: ev("p_ev1_again")}, "expired", ""); !errors.Is(err, board.ErrProposalClosed) {
		t.Fatalf("second close: %v", err)
	}
	if n := count("p_ev1_again"); n != 0 {
		t.Fatalf("the losing close wrote %d events", n)
	}
}
