package store_test

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
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

func ptr(s string) *string { return &s }

// newspaperBoard executes the newspaper plan and returns its board and
// cards by temp id.
func newspaperBoard(t *testing.T, s *store.Store, channel string) (board.ID, map[string]board.Card) {
	t.Helper()
	return storetest.Execute(t, s, board.Execution{ProposalID: board.ProposalID("p_" + channel), Channel: channel, Thread: "T1", ApprovedBy: "alice", Plan: newspaper(t)})
}

func TestHandlesAndFindCard(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, cards := newspaperBoard(t, s, "console:handles")
	b, all, err := s.Board(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if b.Key != "NEWS" || b.Thread != "T1" {
		t.Fatalf("board = %+v", b)
	}
	for i, c := range all {
		if c.Number != i+1 || c.Handle != fmt.Sprintf("NEWS-%d", i+1) || c.Version != 1 {
			t.Errorf("card %d = %s #%d v%d", i, c.Handle, c.Number, c.Version)
		}
	}
	for ref, want := range map[string]string{
		"NEWS-3": "research_b", "news-3": "research_b", "#3": "research_b", "3": "research_b",
		"Synth": "synthesis", "define daily topic and source policy": "topic_policy", string(cards["website"].ID): "website",
	} {
		got, err := s.FindCard(ctx, id, ref)
		if err != nil || got.ID != cards[want].ID {
			t.Errorf("FindCard(%q) = %s, %v; want %s", ref, got.Handle, err, cards[want].Handle)
		}
	}
	var amb *board.AmbiguousError
	if _, err := s.FindCard(ctx, id, "researcher"); !errors.As(err, &amb) || len(amb.Candidates) != 3 {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := s.FindCard(ctx, id, "NEWS-99"); !errors.Is(err, board.ErrNotFound) {
		t.Errorf("unknown handle: %v", err)
	}

	// Cards added to the board later continue its numbering.
	add := newspaper(t)
	add.Actions[0].Type = "create_card_batch"
	add.Actions[0].Board = nil
	add.Actions[0].Cards = add.Actions[0].Cards[:2]
	add.Actions[0].Links = nil
	if _, err := s.Execute(ctx, board.Execution{ProposalID: "p_more", Channel: "console:handles", Plan: add}); err != nil {
		t.Fatal(err)
	}
	_, all, _ = s.Board(ctx, id)
	if len(all) != 12 || all[11].Handle != "NEWS-12" {
		t.Fatalf("after adding: %d cards, last %s", len(all), all[len(all)-1].Handle)
	}
}

func TestChangeCardAudited(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, cards := newspaperBoard(t, s, "console:audit")
	topic := cards["topic_policy"]

	up, err := s.ChangeCard(ctx, board.CardChange{Card: topic.ID, Actor: "bob", Via: "api", Channel: "console:audit",
		Status: ptr("in progress"), Assignee: ptr("Coder"), Criterion: &board.CriterionMark{Index: 0, Done: true}})
	if err != nil {
		t.Fatal(err)
	}
	if up.Card.Status != "In Progress" || up.Card.Assignee != "Coder" || up.Card.Version != 2 || len(up.Changes) != 3 || up.AuditID == 0 {
		t.Fatalf("update = %+v", up)
	}
	again, err := s.ChangeCard(ctx, board.CardChange{Card: topic.ID, Actor: "bob", Status: ptr("In Progress")})
	if err != nil || len(again.Changes) != 0 || again.Card.Version != 2 {
		t.Fatalf("no-op change = %+v, %v", again, err)
	}
	events, err := s.Audit(ctx, board.AuditFilter{BoardID: id})
	if err != nil {
		t.Fatal(err)
	}
	var changed []board.AuditEvent
	for _, e := range events {
		if e.Action == "card_changed" {
			changed = append(changed, e)
		}
	}
	if len(changed) != 1 || changed[0].Actor != "bob" || changed[0].Channel != "console:audit" {
		t.Fatalf("audit = %+v", changed)
	}
	var detail struct {
		Handle  string
		Via     string
		Changes []board.FieldChange
	}
	_ = json.Unmarshal(changed[0].Detail, &detail)
	if detail.Handle != "NEWS-1" || detail.Via != "api" || len(detail.Changes) != 3 ||
		detail.Changes[0] != (board.FieldChange{Field: "status", From: "Ready", To: "In Progress"}) {
		t.Fatalf("audit detail = %s", changed[0].Detail)
	}

	for name, ch := range map[string]board.CardChange{
		"status":    {Card: topic.ID, Status: ptr("Deleted")},
		"title":     {Card: topic.ID, Title: ptr("  ")},
		"criterion": {Card: topic.ID, Criterion: &board.CriterionMark{Index: 40, Done: true}},
	} {
		if _, err := s.ChangeCard(ctx, ch); !errors.Is(err, board.ErrInvalidChange) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := s.ChangeCard(ctx, board.CardChange{Card: "c_nope", Status: ptr("Done")}); !errors.Is(err, board.ErrNotFound) {
		t.Errorf("unknown card: %v", err)
	}
}

func TestCardCannotStartBeforeDependencies(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	_, cards := newspaperBoard(t, s, "console:deps")
	synth := cards["synthesis"]
	for _, st := range board.Started {
		_, err := s.ChangeCard(ctx, board.CardChange{Card: synth.ID, Actor: "bob", Status: ptr(st)})
		var be *board.BlockedError
		if !errors.As(err, &be) || len(be.Blockers) != 3 || be.Blockers[0].Handle != "NEWS-2" {
			t.Fatalf("%s: %v", st, err)
		}
	}
	// Blocked and Ready are always allowed: they say nothing has started.
	if _, err := s.ChangeCard(ctx, board.CardChange{Card: synth.ID, Status: ptr("Blocked")}); err != nil {
		t.Fatal(err)
	}
	for _, temp := range []string{"topic_policy", "research_a", "research_b", "research_c"} {
		if _, err := s.ChangeCard(ctx, board.CardChange{Card: cards[temp].ID, Actor: "bob", Status: ptr("Done")}); err != nil {
			t.Fatalf("%s: %v", temp, err)
		}
	}
	if up, err := s.ChangeCard(ctx, board.CardChange{Card: synth.ID, Status: ptr("In Progress")}); err != nil || up.Card.Status != "In Progress" {
		t.Fatalf("after dependencies are done: %+v, %v", up, err)
	}
}

func TestChangeCardVersionConflict(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	_, cards := newspaperBoard(t, s, "console:conflict")
	c := cards["visual_qa"]
	if _, err := s.ChangeCard(ctx, board.CardChange{Card: c.ID, Title: ptr("QA the front page"), IfVersion: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := s.ChangeCard(ctx, board.CardChange{Card: c.ID, Title: ptr("Stale edit"), IfVersion: 1})
	var ce *board.ConflictError
	if !errors.As(err, &ce) || ce.Current.Version != 2 || ce.Current.Title != "QA the front page" {
		t.Fatalf("stale edit: %v", err)
	}
}

// TestTwentyConcurrentMovers has 20 people move cards of one board at the
// same time, several on the same card. Last writer wins per field: no
// change is lost from the audit, each card's audited history is one
// unbroken chain (every change starts from the value the previous one
// left), and each card ends where its last audited change put it.
func TestTwentyConcurrentMovers(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, cards := newspaperBoard(t, s, "console:crowd")
	// topic_policy has no dependencies, so it may go anywhere; the others
	// wait on the website, so they move among the statuses that are not
	// started.
	targets := []board.Card{cards["topic_policy"], cards["visual_qa"], cards["attribution_audit"], cards["schedule"]}
	statuses := []string{"Backlog", "Ready", "Blocked"}
	const people = 20
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, people)
	for i := range people {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c := targets[i%len(targets)]
			ch := board.CardChange{Card: c.ID, Actor: fmt.Sprintf("person%02d", i), Via: "api", Status: ptr(statuses[i%len(statuses)]), Assignee: ptr(fmt.Sprintf("person%02d", i))}
			if c.ID == cards["topic_policy"].ID {
				ch.Status = ptr([]string{"In Progress", "Review", "Done", "Ready"}[i%4])
			}
			if _, err := s.ChangeCard(ctx, ch); err != nil {
				errs <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	events, err := s.Audit(ctx, board.AuditFilter{BoardID: id})
	if err != nil {
		t.Fatal(err)
	}
	type state struct{ status, assignee string }
	last := map[string]*state{}
	for _, c := range targets {
		last[string(c.ID)] = &state{c.Status, c.Assignee}
	}
	changes := 0
	for _, e := range events {
		if e.Action != "card_changed" {
			continue
		}
		changes++
		var d struct {
			Card    string
			Changes []board.FieldChange
		}
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatal(err)
		}
		st := last[d.Card]
		for _, fc := range d.Changes {
			field := &st.status
			if fc.Field == "assignee" {
				field = &st.assignee
			}
			if fc.From != *field {
				t.Errorf("audit %d: %s of %s changed from %q, but the previous change left %q: a lost update", e.ID, fc.Field, d.Card, fc.From, *field)
			}
			*field = fc.To
		}
	}
	if changes != people {
		t.Errorf("%d audited changes, want %d (each mover wrote a new assignee)", changes, people)
	}
	_, now, _ := s.Board(ctx, id)
	for _, c := range now {
		if st, ok := last[string(c.ID)]; ok && (c.Status != st.status || c.Assignee != st.assignee) {
			t.Errorf("%s is %s/%s, but its audit ends at %s/%s", c.Handle, c.Status, c.Assignee, st.status, st.assignee)
		}
		if _, ok := last[string(c.ID)]; ok && c.Version != 1+people/len(targets) {
			t.Errorf("%s at version %d, want %d", c.Handle, c.Version, 1+people/len(targets))
		}
	}
}

func TestFeedDeliversChanges(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, cards := newspaperBoard(t, s, "console:feed")
	feed := store.NewFeed(s, storetest.Logger(t))
	go func() { _ = feed.Run(ctx) }()
	events, stop := feed.Subscribe(id)
	defer stop()
	other, stopOther := feed.Subscribe(board.NewBoardID())
	defer stopOther()
	<-feed.Ready()
	if _, err := s.ChangeCard(ctx, board.CardChange{Card: cards["topic_policy"].ID, Actor: "carol", Via: "page", Status: ptr("In Progress")}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.Card.Handle != "NEWS-1" || ev.Card.Status != "In Progress" || ev.Actor != "carol" || ev.Via != "page" || len(ev.Changes) != 1 {
			t.Fatalf("event = %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("no event")
	}
	select {
	case ev := <-other:
		t.Fatalf("another board's subscriber got %+v", ev)
	default:
	}
}

// TestTwentyConcurrentMoversWithVersions has 20 people move the same card
// at once, each from the version they saw: exactly one wins, the other 19
// are told of the conflict with the card as it now is, and nothing they
// sent is written.
func TestTwentyConcurrentMoversWithVersions(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, cards := newspaperBoard(t, s, "console:versions")
	c := cards["schedule"]
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := s.ChangeCard(ctx, board.CardChange{Card: c.ID, Actor: fmt.Sprintf("person%02d", i), Via: "api",
				Status: ptr("Blocked"), Assignee: ptr(fmt.Sprintf("person%02d", i)), IfVersion: c.Version})
			results <- err
		}()
	}
	close(start)
	wg.Wait()
	close(results)
	won, lost := 0, 0
	for err := range results {
		var ce *board.ConflictError
		switch {
		case err == nil:
			won++
		case errors.As(err, &ce) && ce.Current.Version == 2 && ce.Current.Status == "Blocked":
			lost++
		default:
			t.Errorf("unexpected: %v", err)
		}
	}
	if won != 1 || lost != 19 {
		t.Fatalf("%d won, %d told of a conflict; want 1 and 19", won, lost)
	}
	events, _ := s.Audit(ctx, board.AuditFilter{BoardID: id})
	changes := 0
	for _, e := range events {
		if e.Action == "card_changed" {
			changes++
		}
	}
	if changes != 1 {
		t.Errorf("%d changes audited, want the winner's only", changes)
	}
}

// A card's text gets the check a plan's text gets, whichever way it comes:
// control characters are refused (a NUL as a refused change, not as a
// database error), and titles and assignees lose the bidi and zero-width
// characters that make them read as something else.
func TestCardTextIsCheckedAsPlansAre(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	_, cards := newspaperBoard(t, s, "console:text")
	c := cards["topic_policy"]
	for name, tc := range map[string]struct {
		ch   board.CardChange
		says string
	}{
		"NUL in a title":     {board.CardChange{Card: c.ID, Title: ptr("QA\x00 front page")}, "the title contains the control character U+0000 (NUL)"},
		"NUL in a body":      {board.CardChange{Card: c.ID, Body: ptr("Check\x00 it")}, "the body contains the control character U+0000 (NUL)"},
		"escape in a body":   {board.CardChange{Card: c.ID, Body: ptr("\x1b[31mred")}, "U+001B"},
		"C1 in a title":      {board.CardChange{Card: c.ID, Title: ptr("QA\u0085")}, "U+0085"},
		"bell in assignee":   {board.CardChange{Card: c.ID, Assignee: ptr("Coder\a")}, "U+0007"},
		"delete in a title":  {board.CardChange{Card: c.ID, Title: ptr("QA\x7f")}, "U+007F"},
		"NUL with a version": {board.CardChange{Card: c.ID, Title: ptr("\x00"), IfVersion: c.Version}, "U+0000"},
	} {
		_, err := s.ChangeCard(ctx, tc.ch)
		if !errors.Is(err, board.ErrInvalidChange) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an invalid change saying %q", name, err, tc.says)
		}
	}
	up, err := s.ChangeCard(ctx, board.CardChange{Card: c.ID, Actor: "bob",
		Title:    ptr("Pay \u202eecnavda\u202c invoice\u200b\ufeff"),
		Assignee: ptr("Co\u200dder"),
		Body:     ptr("line one\nline two\twith a tab"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if up.Card.Title != "Pay ecnavda invoice" || up.Card.Assignee != "Coder" || up.Card.Body != "line one\nline two\twith a tab" {
		t.Fatalf("stored title %q, assignee %q, body %q", up.Card.Title, up.Card.Assignee, up.Card.Body)
	}
	got, err := s.Card(ctx, c.ID)
	if err != nil || got.Title != "Pay ecnavda invoice" {
		t.Fatalf("read back %q, %v", got.Title, err)
	}
}
