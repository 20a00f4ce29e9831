package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestApprovalDuringPostgresFailover runs on a primary with a synchronous
// standby behind one multi-host URL (target_session_attrs=read-write).
// The primary is stopped while an approval's transaction is between its
// writes (held on a lock before its commit), and the standby promoted:
// the approval is retried once on the promoted primary and makes its
// board once, within 10 s of the promotion; the card feed listens again
// (its viewers told to reload) and delivers changes; the approval's
// outbound events, written with it, are there to be sent once; what
// committed before the failover is all there.
func TestApprovalDuringPostgresFailover(t *testing.T) {
	t.Parallel()
	pair := storetest.NewPair(t)
	s := pair.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, before := setUpPath(t, s, decisionPaths[0])
	feedBoard, cards := newspaperBoard(t, s, "console:failover")
	feed := store.NewFeed(s, storetest.Logger(t))
	go func() { _ = feed.Run(ctx) }()
	viewer, stopViewer := feed.Subscribe(feedBoard)
	defer stopViewer()
	<-feed.Ready()

	// Hold the approval between its writes: its batch waits for the
	// channel's binding, which a session of ours holds until the primary
	// stops.
	holder, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, stallBinding); err != nil {
		t.Fatal(err)
	}
	type result struct {
		res board.ExecResult
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		res, err := s.Execute(ctx, board.Execution{ProposalID: "p_x", Channel: "c", ApprovedBy: "alice", Plan: env,
			Events: func(res board.ExecResult) ([]board.OutboundEvent, error) {
				return []board.OutboundEvent{{MsgID: "msg_p_x_approved", Type: "proposal.approved", Endpoints: []string{"hook:forms"}, Body: []byte(`{"board":"` + string(res.BoardID) + `"}`)}}, nil
			}})
		done <- result{res, err, time.Now()}
	}()
	storetest.WaitLockWaiters(t, s, 1, nil)
	pair.StopPrimary(t)
	// The approval, cut, waits for a writable Postgres: there is none
	// until the promotion.
	select {
	case r := <-done:
		t.Fatalf("the approval ended with no primary: %+v, %v", r.res, r.err)
	case <-time.After(time.Second):
	}
	pair.Promote(t)
	promoted := time.Now()

	r := <-done
	if r.err != nil || r.res.Replayed {
		t.Fatalf("approval = %+v, %v; want its board made on the promoted primary", r.res, r.err)
	}
	if took := r.at.Sub(promoted); took > 10*time.Second {
		t.Errorf("the approval completed %s after the promotion, want within 10 s", took)
	}
	t.Logf("approval completed %s after the promotion", r.at.Sub(promoted).Round(time.Millisecond))
	if st := proposalState(t, s, "p_x"); st != "approved" {
		t.Errorf("state %q", st)
	}
	if n := count(t, s, `SELECT count(*) FROM boards WHERE proposal_id = 'p_x'`); n != 1 {
		t.Errorf("%d boards for p_x, want 1", n)
	}
	if got := count(t, s, `SELECT count(*) FROM cards`) - before - len(cards); got != r.res.Cards {
		t.Errorf("%d new cards, want %d", got, r.res.Cards)
	}
	if n := count(t, s, `SELECT count(*) FROM boards WHERE proposal_id = 'p_board'`); n != 1 {
		t.Errorf("the board committed before the failover: %d rows, want 1", n)
	}
	claimed, err := s.ClaimEvents(ctx, 10, time.Minute)
	if err != nil || len(claimed) != 1 || claimed[0].MsgID != "msg_p_x_approved" {
		t.Fatalf("outbox after the failover: %+v, %v; want the approval's one event", claimed, err)
	}

	// The feed lost its connection; once it listens on the promoted
	// primary it ends its subscriptions so viewers reload.
	select {
	case _, ok := <-viewer:
		if ok {
			t.Fatal("the feed delivered an event across the failover instead of ending the subscription")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the feed did not listen again within 10 s of the promotion")
	}
	again, stopAgain := feed.Subscribe(feedBoard)
	defer stopAgain()
	if _, err := s.ChangeCard(ctx, board.CardChange{Card: cards["topic_policy"].ID, Actor: "carol", Via: "page", Status: ptr("In Progress")}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-again:
		if ev.Card.Status != "In Progress" {
			t.Fatalf("event = %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no card change from the feed after the failover")
	}
}
