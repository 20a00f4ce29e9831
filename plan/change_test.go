package plan_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/plan"
)

// newspaperState is the newspaper board as it stands after approval:
// NEWS-1 Ready, the rest Backlog, the plan's 13 links.
func newspaperState() *plan.BoardState {
	deps := map[int][]int{2: {1}, 3: {1}, 4: {1}, 5: {2, 3, 4}, 6: {5, 4}, 7: {6}, 8: {6}, 9: {6}, 10: {8, 7}}
	st := &plan.BoardState{}
	for i := 1; i <= 10; i++ {
		c := plan.CardSummary{ID: fmt.Sprintf("c_%d", i), Handle: fmt.Sprintf("NEWS-%d", i), Title: fmt.Sprintf("Card %d", i), Status: "Backlog"}
		if i == 1 {
			c.Status = "Ready"
		}
		for _, d := range deps[i] {
			c.DependsOn = append(c.DependsOn, fmt.Sprintf("c_%d", d))
		}
		st.Cards = append(st.Cards, c)
	}
	return st
}

func checkChange(t *testing.T, actions string) plan.Result {
	t.Helper()
	raw := `{"kind":"propose_actions","answer":"changes","actions":` + actions + `}`
	return plan.CheckJSON([]byte(raw), plan.Options{Profiles: []string{"Coder", "Planner", "Researcher", "Reviewer"}, HasTargetBoard: true, Board: newspaperState()})
}

func TestUpdateCardAndAddLinks(t *testing.T) {
	t.Parallel()
	// "Mark the research cards done and add a fact-check step" as one plan.
	res := checkChange(t, `[
	  {"type":"update_card","card":"news-1","status":"done"},
	  {"type":"update_card","card":"NEWS-2","status":"Done"},
	  {"type":"update_card","card":"c_3","status":"Done","assignee":"reviewer"},
	  {"type":"update_card","card":"NEWS-4","status":"Done"},
	  {"type":"create_card","cards":[{"temp_id":"fact_check","title":"Fact-check the research","body":"Check every claim.","assignee":"Reviewer","status":"Ready"}]},
	  {"type":"add_links","links":[{"card":"fact_check","depends_on":"NEWS-2"},{"card":"NEWS-5","depends_on":"fact_check"}]},
	  {"type":"update_card","card":"NEWS-5","title":"Synthesize the checked edition"}
	]`)
	if !res.Valid {
		t.Fatalf("errors: %+v", res.Errors)
	}
	a := res.Plan.Actions
	if a[0].Card != "NEWS-1" || *a[0].Status != "Done" || a[2].Card != "NEWS-3" || *a[2].Assignee != "Reviewer" {
		t.Errorf("not normalized: %+v %+v", a[0], a[2])
	}
	if a[5].Links[1] != (plan.Link{Card: "NEWS-5", DependsOn: "fact_check"}) {
		t.Errorf("links = %+v", a[5].Links)
	}
}

func TestChangeActionsRejected(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ actions, path, message string }{
		"unknown card":    {`[{"type":"update_card","card":"NEWS-99","status":"Done"}]`, "actions[0].card", `unknown card "NEWS-99"`},
		"illegal status":  {`[{"type":"update_card","card":"NEWS-1","status":"Deleted"}]`, "actions[0].status", `"Deleted" is not a status`},
		"nothing changed": {`[{"type":"update_card","card":"NEWS-1"}]`, "actions[0]", "changes nothing"},
		"blank title":     {`[{"type":"update_card","card":"NEWS-1","title":"  "}]`, "actions[0].title", "must not be blank"},
		"start too early": {`[{"type":"update_card","card":"NEWS-5","status":"In Progress"}]`, "actions[0].status", "NEWS-5 cannot move to In Progress before NEWS-2 (Backlog), NEWS-3 (Backlog), NEWS-4 (Backlog) are Done"},
		"order matters":   {`[{"type":"update_card","card":"NEWS-2","status":"Done"},{"type":"update_card","card":"NEWS-1","status":"Done"}]`, "actions[0].status", "before NEWS-1 (Ready) is Done"},
		"unknown link end": {`[{"type":"add_links","links":[{"card":"NEWS-2","depends_on":"ghost"}]}]`, "actions[0].links[0].depends_on",
			`unknown card "ghost"`},
		"self link": {`[{"type":"add_links","links":[{"card":"NEWS-2","depends_on":"news-2"}]}]`, "actions[0].links[0]", "cannot depend on itself"},
		"cycle with existing links": {`[{"type":"add_links","links":[{"card":"NEWS-1","depends_on":"NEWS-10"}]}]`, "actions[0].links",
			"cycle with the board's existing links (each depends on the next): NEWS-1 -> NEWS-10 -> NEWS-7 -> NEWS-6 -> NEWS-4 -> NEWS-1"},
		"cycle through a new card": {`[{"type":"create_card","cards":[{"temp_id":"fc","title":"Fact-check","body":"b","assignee":"Reviewer","status":"Backlog"}]},
			{"type":"add_links","links":[{"card":"fc","depends_on":"NEWS-5"},{"card":"NEWS-2","depends_on":"fc"}]}]`, "actions[1].links", "fc -> NEWS-5 -> NEWS-2 -> fc"},
		"links across boards": {`[{"type":"create_board_with_cards","board":{"name":"Other"},"cards":[{"temp_id":"x","title":"X","body":"b","assignee":"Coder","status":"Ready"}]},
			{"type":"add_links","links":[{"card":"x","depends_on":"NEWS-1"}]}]`, "actions[1].links[0]", "different boards"},
		"update a plan card": {`[{"type":"create_card","cards":[{"temp_id":"fc","title":"F","body":"b","assignee":"Coder","status":"Ready"}]},{"type":"update_card","card":"fc","status":"Done"}]`,
			"actions[1].card", `unknown card "fc"`},
		"delete still refused": {`[{"type":"delete_card","card":"NEWS-1"}]`, "actions[0].type", "is not allowed"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := checkChange(t, tc.actions)
			if res.Valid {
				t.Fatal("accepted")
			}
			for _, e := range res.Errors {
				if e.Path == tc.path && strings.Contains(e.Message, tc.message) {
					return
				}
			}
			t.Fatalf("no error at %s saying %q: %+v", tc.path, tc.message, res.Errors)
		})
	}
}

func TestChangeActionsNeedABoard(t *testing.T) {
	t.Parallel()
	raw := `{"kind":"propose_actions","answer":"x","actions":[{"type":"update_card","card":"NEWS-1","status":"Done"}]}`
	res := plan.CheckJSON([]byte(raw), plan.Options{})
	if res.Valid || res.Errors[0].Path != "actions[0].type" {
		t.Fatalf("without a board: %+v", res.Errors)
	}
	// Offline with --board the references cannot be checked: a warning.
	res = plan.CheckJSON([]byte(raw), plan.Options{HasTargetBoard: true})
	if !res.Valid || len(res.Warnings) == 0 {
		t.Fatalf("offline: %+v %+v", res.Errors, res.Warnings)
	}
}

// TestSecondBoardIsWarned: a plan making a board in a channel that has
// one is valid (people may want a second board) but says so, naming the
// board it would replace as the channel's current one.
func TestSecondBoardIsWarned(t *testing.T) {
	t.Parallel()
	st := newspaperState()
	st.Name, st.Key = "Daily newspaper", "NEWS"
	raw := `{"kind":"propose_actions","answer":"a board","actions":[{"type":"create_board_with_cards","board":{"name":"Weekly digest","goal":"g"},"cards":[{"temp_id":"a","title":"Collect","body":"Collect the week's stories.","assignee":"Researcher","status":"Ready"}]}]}`
	res := plan.CheckJSON([]byte(raw), plan.Options{HasTargetBoard: true, Board: st})
	if !res.Valid {
		t.Fatalf("errors: %+v", res.Errors)
	}
	found := false
	for _, w := range res.Warnings {
		if w.Path == "actions[0].board" && strings.Contains(w.Message, `"Daily newspaper" (NEWS)`) && strings.Contains(w.Message, "second board") {
			found = true
		}
	}
	if !found {
		t.Errorf("no second-board warning in %+v", res.Warnings)
	}
	res = plan.CheckJSON([]byte(raw), plan.Options{})
	for _, w := range res.Warnings {
		if strings.Contains(w.Message, "second board") {
			t.Errorf("warned with no board in the channel: %+v", w)
		}
	}
}
