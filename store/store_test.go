package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

var profiles = []string{"Coder", "Planner", "Researcher", "Reviewer"}

// newspaper returns the testdata newspaper plan, validated and normalized.
func newspaper(t testing.TB) plan.Envelope {
	t.Helper()
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{Profiles: profiles})
	if !res.Valid {
		t.Fatalf("newspaper plan invalid: %+v", res.Errors)
	}
	return *res.Plan
}

func count(t *testing.T, s *store.Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestExecuteNewspaper(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	env := newspaper(t)
	res, err := s.Execute(ctx, board.Execution{ProposalID: "p_1", Channel: "console:general", RequestedBy: "alice", ApprovedBy: "alice", Plan: env})
	if err != nil {
		t.Fatal(err)
	}
	if res.Replayed || res.Cards != 10 || res.Links != 13 || len(res.CardIDs) != 10 {
		t.Fatalf("result = %+v", res)
	}
	b, cards, err := s.Board(ctx, res.BoardID)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "Daily Research Newspaper" || len(cards) != 10 {
		t.Fatalf("board = %+v, %d cards", b, len(cards))
	}
	// Every link of the plan is there, between the right real ids.
	byID := map[board.CardID]board.Card{}
	links := 0
	for _, c := range cards {
		byID[c.ID] = c
		links += len(c.DependsOn)
	}
	if links != 13 {
		t.Fatalf("links = %d", links)
	}
	for _, l := range env.Actions[0].Links {
		from := byID[res.CardIDs[l.Card]]
		found := false
		for _, d := range from.DependsOn {
			found = found || d == res.CardIDs[l.DependsOn]
		}
		if !found {
			t.Errorf("link %s -> %s missing", l.Card, l.DependsOn)
		}
	}
	if cards[0].Title != "Define daily topic and source policy" || cards[0].Status != "Ready" || len(cards[0].AcceptanceCriteria) != 3 {
		t.Errorf("first card = %+v", cards[0])
	}
	cb, err := s.ChannelBoard(ctx, "console:general")
	if err != nil || cb.ID != res.BoardID {
		t.Fatalf("channel board = %+v, %v", cb, err)
	}
	rec, err := s.Proposal(ctx, "p_1")
	if err != nil || rec.State != "approved" || rec.BoardID != res.BoardID || rec.DecidedBy != "alice" {
		t.Fatalf("proposal record = %+v, %v", rec, err)
	}
	events, err := s.Audit(ctx, board.AuditFilter{ProposalID: "p_1"})
	if err != nil || len(events) != 1 || events[0].Action != "executed" || events[0].BoardID != res.BoardID {
		t.Fatalf("audit = %+v, %v", events, err)
	}

	// Replay: same result, nothing written.
	again, err := s.Execute(ctx, board.Execution{ProposalID: "p_1", Channel: "console:general", ApprovedBy: "bob", Plan: env})
	if err != nil || !again.Replayed || again.BoardID != res.BoardID || again.CardIDs["synthesis"] != res.CardIDs["synthesis"] {
		t.Fatalf("replay = %+v, %v", again, err)
	}
	if n := count(t, s, `SELECT count(*) FROM cards`); n != 10 {
		t.Errorf("cards after replay = %d", n)
	}
	if n := count(t, s, `SELECT count(*) FROM audit_events`); n != 1 {
		t.Errorf("audit events after replay = %d", n)
	}
}

func TestExecuteCardActionsLandOnChannelBoard(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	batch := plan.Envelope{Kind: plan.KindProposeActions, Actions: []plan.Action{{
		Type: plan.ActionCreateCardBatch,
		Cards: []plan.CardDraft{
			{TempID: "a", Title: "Add RSS feed", Body: "Publish an RSS feed of each edition.", Status: "Backlog", WorkspaceMode: "Direct"},
			{TempID: "b", Title: "Announce the feed", Body: "Tell readers.", Status: "Backlog", WorkspaceMode: "Direct"},
		},
		Links: []plan.Link{{Card: "b", DependsOn: "a"}},
	}}}
	if _, err := s.Execute(ctx, board.Execution{ProposalID: "p_cards0", Channel: "slack:C1", Plan: batch}); !errors.Is(err, board.ErrNoTargetBoard) {
		t.Fatalf("err = %v, want ErrNoTargetBoard", err)
	}
	first, err := s.Execute(ctx, board.Execution{ProposalID: "p_board", Channel: "slack:C1", Plan: newspaper(t)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Execute(ctx, board.Execution{ProposalID: "p_cards", Channel: "slack:C1", Plan: batch})
	if err != nil {
		t.Fatal(err)
	}
	if res.BoardID != first.BoardID || res.Cards != 2 || res.Links != 1 {
		t.Fatalf("result = %+v", res)
	}
	_, cards, err := s.Board(ctx, first.BoardID)
	if err != nil || len(cards) != 12 {
		t.Fatalf("cards = %d, %v", len(cards), err)
	}
	if n := count(t, s, `SELECT count(*) FROM boards`); n != 1 {
		t.Errorf("boards = %d", n)
	}
}

func TestExecuteConcurrentlyCreatesOneBoard(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	env := newspaper(t)
	var wg sync.WaitGroup
	var failures atomic.Int32
	results := make([]board.ExecResult, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Execute(context.Background(), board.Execution{ProposalID: "p_race", Channel: "console:race", ApprovedBy: fmt.Sprint("user", i), Plan: env})
			if err != nil {
				failures.Add(1)
				t.Error(err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	if failures.Load() > 0 {
		t.FailNow()
	}
	fresh := 0
	for _, r := range results {
		if !r.Replayed {
			fresh++
		}
		if r.BoardID != results[0].BoardID {
			t.Fatalf("different boards: %s and %s", r.BoardID, results[0].BoardID)
		}
	}
	if fresh != 1 {
		t.Errorf("%d executions wrote", fresh)
	}
	if n := count(t, s, `SELECT count(*) FROM boards`); n != 1 {
		t.Errorf("boards = %d", n)
	}
	if n := count(t, s, `SELECT count(*) FROM cards`); n != 10 {
		t.Errorf("cards = %d", n)
	}
}

func TestExecuteFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("constraint on the last link", func(t *testing.T) {
		t.Parallel()
		s := storetest.NewStore(t)
		env := newspaper(t)
		// Bypassing the validator: the last link points a card at itself,
		// which the schema's CHECK refuses.
		a := &env.Actions[0]
		a.Links = append(a.Links, plan.Link{Card: "final_review", DependsOn: "final_review"})
		if _, err := s.Execute(ctx, board.Execution{ProposalID: "p_bad", Channel: "c", Plan: env}); err == nil {
			t.Fatal("self link executed")
		}
		for _, table := range []string{"boards", "cards", "card_links", "proposals", "audit_events", "channel_bindings"} {
			if n := count(t, s, "SELECT count(*) FROM "+table); n != 0 {
				t.Errorf("%s has %d rows after a failed execution", table, n)
			}
		}
	})
	t.Run("failure before commit", func(t *testing.T) {
		t.Parallel()
		s := storetest.NewStore(t)
		store.SetFailBeforeCommit(s, func() error { return errors.New("injected") })
		if _, err := s.Execute(ctx, board.Execution{ProposalID: "p_x", Channel: "c", Plan: newspaper(t)}); err == nil {
			t.Fatal("no error")
		}
		if n := count(t, s, "SELECT (SELECT count(*) FROM boards) + (SELECT count(*) FROM cards) + (SELECT count(*) FROM proposals)"); n != 0 {
			t.Errorf("%d rows left behind", n)
		}
		// The same proposal executes once the fault is gone.
		store.SetFailBeforeCommit(s, nil)
		if res, err := s.Execute(ctx, board.Execution{ProposalID: "p_x", Channel: "c", Plan: newspaper(t)}); err != nil || res.Replayed {
			t.Fatalf("retry = %+v, %v", res, err)
		}
	})
}

func TestExecuteRefusesClosedProposal(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	if err := s.SaveProposal(ctx, board.ProposalRecord{ID: "p_c", Channel: "c", RequestedBy: "alice", Plan: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetProposalState(ctx, board.ProposalRecord{ID: "p_c"}, "cancelled", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Execute(ctx, board.Execution{ProposalID: "p_c", Channel: "c", Plan: newspaper(t)}); !errors.Is(err, board.ErrProposalClosed) {
		t.Fatalf("err = %v", err)
	}
	if err := s.SetProposalState(ctx, board.ProposalRecord{ID: "p_c"}, "expired", ""); !errors.Is(err, board.ErrProposalClosed) {
		t.Fatalf("second close: %v", err)
	}
	// A proposal Postgres did not know is recorded closed.
	if err := s.SetProposalState(ctx, board.ProposalRecord{ID: "p_none"}, "expired", ""); err != nil {
		t.Fatalf("unknown proposal: %v", err)
	}
	if p, err := s.Proposal(ctx, "p_none"); err != nil || p.State != "expired" {
		t.Fatalf("unknown proposal's record: %+v, %v", p, err)
	}
	if n := count(t, s, "SELECT count(*) FROM boards"); n != 0 {
		t.Errorf("boards = %d", n)
	}
}

func TestStatusSummary(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	res, err := s.Execute(ctx, board.Execution{ProposalID: "p_s", Channel: "c", Plan: newspaper(t)})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Status(ctx, res.BoardID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counts["Ready"] != 1 || st.Counts["Backlog"] != 9 || st.Counts["Done"] != 0 || len(st.Ready) != 1 || len(st.Waiting) != 9 {
		t.Fatalf("status = counts %v, ready %d, blocked %d", st.Counts, len(st.Ready), len(st.Waiting))
	}
	setStatus := func(id board.CardID, status string) error {
		_, err := s.ChangeCard(ctx, board.CardChange{Card: id, Actor: "test", Via: "api", Status: &status})
		return err
	}
	if err := setStatus(res.CardIDs["topic_policy"], "Done"); err != nil {
		t.Fatal(err)
	}
	st, _ = s.Status(ctx, res.BoardID)
	var ready []string
	for _, c := range st.Ready {
		ready = append(ready, c.Title)
	}
	if len(st.Ready) != 3 || len(st.Waiting) != 6 || st.Counts["Done"] != 1 {
		t.Fatalf("after topic done: ready %v, blocked %d", ready, len(st.Waiting))
	}
	if err := setStatus(res.CardIDs["synthesis"], "Deleted"); err == nil {
		t.Error("unknown status accepted")
	}
	if err := setStatus("c_nope", "Done"); !errors.Is(err, board.ErrNotFound) {
		t.Errorf("unknown card: %v", err)
	}
	if _, err := s.Status(ctx, "b_nope"); !errors.Is(err, board.ErrNotFound) {
		t.Errorf("unknown board: %v", err)
	}
	sum, err := s.BoardSummary(ctx, res.BoardID)
	if err != nil || sum.Name != "Daily Research Newspaper" || len(sum.Cards) != 9 || sum.Counts["Done"] != 1 {
		t.Fatalf("summary = %+v, %v", sum, err)
	}
}

func TestProposalHistoryAndDeliveries(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	if err := s.SaveProposal(ctx, board.ProposalRecord{ID: "p_v1", Channel: "c", RequestedBy: "alice", Plan: []byte(`{"kind":"propose_actions"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveProposal(ctx, board.ProposalRecord{ID: "p_v2", Channel: "c", Version: 2, Supersedes: "p_v1", RequestedBy: "alice", Plan: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetProposalState(ctx, board.ProposalRecord{ID: "p_v1"}, "superseded", "alice"); err != nil {
		t.Fatal(err)
	}
	p, err := s.Proposal(ctx, "p_v2")
	if err != nil || p.Version != 2 || p.Supersedes != "p_v1" || p.State != "pending" {
		t.Fatalf("v2 = %+v, %v", p, err)
	}
	if p, _ := s.Proposal(ctx, "p_v1"); p.State != "superseded" || p.DecidedBy != "alice" || p.DecidedAt.IsZero() {
		t.Fatalf("v1 = %+v", p)
	}
	if _, err := s.Proposal(ctx, "p_none"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}

	if err := s.RecordAudit(ctx, board.AuditEvent{Actor: "alice", Action: "cancelled", Channel: "c", ProposalID: "p_v2", Detail: []byte(`{"version":2}`)}); err != nil {
		t.Fatal(err)
	}
	ev, err := s.Audit(ctx, board.AuditFilter{Channel: "c"})
	if err != nil || len(ev) != 1 || string(ev[0].Detail) != `{"version": 2}` {
		t.Fatalf("audit = %+v, %v", ev, err)
	}
	if err := s.BindChannel(ctx, "c", "b_none"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("bind to missing board: %v", err)
	}
}

// Two versions of one request never both execute: the second finds the
// first approved in the same transaction and writes nothing.
func TestExecuteRefusesASecondVersionOfAChain(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	env := newspaper(t)
	for _, p := range []board.ProposalRecord{{ID: "p_v1", Channel: "c"}, {ID: "p_v2", Chain: "p_v1", Version: 2, Supersedes: "p_v1", Channel: "c"}} {
		if err := s.SaveProposal(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Execute(ctx, board.Execution{ProposalID: "p_v1", Channel: "c", Plan: env}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Execute(ctx, board.Execution{ProposalID: "p_v2", Chain: "p_v1", Channel: "c", Plan: env})
	var other *board.OtherVersionApprovedError
	if !errors.As(err, &other) || other.ProposalID != "p_v1" || !errors.Is(err, board.ErrProposalClosed) {
		t.Fatalf("second version: %v", err)
	}
	var boards int
	if err := s.Pool().QueryRow(ctx, "SELECT count(*) FROM boards").Scan(&boards); err != nil || boards != 1 {
		t.Fatalf("boards = %d, %v", boards, err)
	}
}

// An audit event with a key is written once however often it is recorded.
func TestAuditDedupeKey(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	for range 3 {
		if err := s.RecordAudit(ctx, board.AuditEvent{Action: "requested", Channel: "c", DedupeKey: "requested:r_1"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordAudit(ctx, board.AuditEvent{Action: "note", Channel: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordAudit(ctx, board.AuditEvent{Action: "note", Channel: "c"}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Audit(ctx, board.AuditFilter{Channel: "c"})
	if err != nil || len(evs) != 3 {
		t.Fatalf("events = %d, %v; want one keyed and two plain", len(evs), err)
	}
}
