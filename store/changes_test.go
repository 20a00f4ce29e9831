package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// changePlan validates a V2 plan against the board as the engine does.
func changePlan(t *testing.T, s *store.Store, id board.ID, actions string) plan.Envelope {
	t.Helper()
	sum, err := s.BoardSummary(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	res := planner.Check([]byte(`{"kind":"propose_actions","answer":"x","actions":`+actions+`}`), plan.Options{Profiles: profiles, HasTargetBoard: true, Board: sum.State})
	if !res.Valid {
		t.Fatalf("plan invalid: %+v", res.Errors)
	}
	return *res.Plan
}

func TestExecuteUpdateCardAndAddLinks(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s, "console:v2")
	plan := changePlan(t, s, id, `[
	  {"type":"update_card","card":"NEWS-1","status":"Done"},
	  {"type":"update_card","card":"NEWS-2","status":"Done","assignee":"Reviewer"},
	  {"type":"update_card","card":"NEWS-3","status":"Done"},
	  {"type":"update_card","card":"NEWS-4","status":"Done"},
	  {"type":"create_card","cards":[{"temp_id":"fact_check","title":"Fact-check the research","body":"Check every claim.","assignee":"Reviewer","status":"Ready"}]},
	  {"type":"add_links","links":[{"card":"fact_check","depends_on":"NEWS-2"},{"card":"NEWS-5","depends_on":"fact_check"}]}
	]`)
	ex := board.Execution{ProposalID: "p_v2", Channel: "console:v2", ApprovedBy: "alice", Plan: plan}
	res, err := s.Execute(ctx, ex)
	if err != nil {
		t.Fatal(err)
	}
	if res.BoardID != id || res.Updated != 4 || res.Cards != 1 || res.Links != 2 {
		t.Fatalf("result = %+v", res)
	}
	again, err := s.Execute(ctx, ex)
	if err != nil || !again.Replayed || again.Updated != 4 {
		t.Fatalf("second execution = %+v, %v", again, err)
	}
	_, cards, _ := s.Board(ctx, id)
	st := board.Summarize(board.Board{}, cards)
	if st.Counts["Done"] != 4 || len(cards) != 11 || cards[10].Handle != "NEWS-11" || cards[1].Assignee != "Reviewer" {
		t.Fatalf("board after: %v, %d cards", st.Counts, len(cards))
	}
	if len(cards[4].DependsOn) != 4 || len(cards[10].DependsOn) != 1 {
		t.Errorf("links: NEWS-5 depends on %v, NEWS-11 on %v", cards[4].DependsOn, cards[10].DependsOn)
	}
	events, _ := s.Audit(ctx, board.AuditFilter{BoardID: id})
	var changed, linked, executed int
	for _, e := range events {
		switch e.Action {
		case "card_changed":
			changed++
			if e.Actor != "alice" || !strings.Contains(string(e.Detail), `"via": "plan"`) {
				t.Errorf("audit = %+v %s", e, e.Detail)
			}
		case "links_added":
			linked++
		case "executed":
			executed++
		}
	}
	// Applied exactly once: the replay wrote nothing.
	if changed != 4 || linked != 1 || executed != 2 {
		t.Errorf("audit: %d card changes, %d link events, %d executions (one from creating the board)", changed, linked, executed)
	}
}

func TestExecuteRefusesWhatTheBoardNoLongerAllows(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, cards := newspaperBoard(t, s, "console:v2bad")
	// Valid when proposed...
	plan := changePlan(t, s, id, `[{"type":"update_card","card":"NEWS-8","title":"Audit every link"},{"type":"add_links","links":[{"card":"NEWS-9","depends_on":"NEWS-7"}]}]`)
	// ...but someone made NEWS-7 wait on NEWS-9 since (as an older plan
	// could have): approving now would close a cycle.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO card_links (board_id, card_id, depends_on) VALUES ($1, $2, $3)`, id, cards["visual_qa"].ID, cards["schedule"].ID); err != nil {
		t.Fatal(err)
	}
	_, err := s.Execute(ctx, board.Execution{ProposalID: "p_cycle", Channel: "console:v2bad", ApprovedBy: "alice", Plan: plan})
	if !errors.Is(err, board.ErrInvalidPlan) || !strings.Contains(err.Error(), "actions[1].links: the links would make a dependency cycle: NEWS-9 -> NEWS-7 -> NEWS-9") {
		t.Fatalf("err = %v", err)
	}
	// Nothing of the plan was applied.
	_, after, _ := s.Board(ctx, id)
	if after[7].Title == "Audit every link" || len(after[8].DependsOn) != 1 {
		t.Fatalf("a refused plan changed the board: %+v", after[7])
	}

	// A card that may start when proposed, but not any more when approved.
	if _, err := s.ChangeCard(ctx, board.CardChange{Card: cards["topic_policy"].ID, Status: ptr("Done")}); err != nil {
		t.Fatal(err)
	}
	start := changePlan(t, s, id, `[{"type":"update_card","card":"NEWS-2","status":"In Progress"}]`)
	if _, err := s.ChangeCard(ctx, board.CardChange{Card: cards["topic_policy"].ID, Status: ptr("Ready")}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Execute(ctx, board.Execution{ProposalID: "p_start", Channel: "console:v2bad", Plan: start})
	if !errors.Is(err, board.ErrInvalidPlan) || !errors.Is(err, board.ErrBlocked) {
		t.Fatalf("start after the dependency left Done: %v", err)
	}
}
