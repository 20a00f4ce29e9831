package plan_test

import (
	"strings"
	"testing"

	"github.com/bobnet/bobnet/plan"
)

// A NUL or another control character in model output is a bad plan with
// the field's path, never a database error later.
func TestControlCharactersAreRejectedWithAPath(t *testing.T) {
	base := `{"kind":"propose_actions","answer":"A","confidence":0.9,"actions":[{"type":"create_board_with_cards","board":{"name":"B","goal":"G"},
"cards":[{"temp_id":"c1","title":TITLE,"body":BODY,"assignee":"Coder","status":"Backlog","acceptance_criteria":CRIT}]}]}`
	tests := []struct {
		name, title, body, crit, path string
	}{
		{"NUL in a body", `"T"`, `"before\u0000after"`, `["ok"]`, "actions[0].cards[0].body"},
		{"escape in a title", `"T\u001b[31m"`, `"B"`, `["ok"]`, "actions[0].cards[0].title"},
		{"C1 control in a criterion", `"T"`, `"B"`, `["ok\u0085"]`, "actions[0].cards[0].acceptance_criteria[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := strings.NewReplacer("TITLE", tt.title, "BODY", tt.body, "CRIT", tt.crit).Replace(base)
			res := plan.CheckJSON([]byte(raw), plan.Options{})
			if res.Valid {
				t.Fatal("valid")
			}
			found := false
			for _, e := range res.Errors {
				found = found || (e.Path == tt.path && strings.Contains(e.Message, "control character"))
			}
			if !found {
				t.Fatalf("errors = %+v; want one at %s", res.Errors, tt.path)
			}
		})
	}
	ok := strings.NewReplacer("TITLE", `"T"`, "BODY", `"line one\nline two\twith a tab\r\n"`, "CRIT", `["ok"]`).Replace(base)
	if res := plan.CheckJSON([]byte(ok), plan.Options{}); !res.Valid {
		t.Fatalf("tabs and newlines refused: %+v", res.Errors)
	}
}

// Bidi overrides and zero-width characters are taken out of titles and
// board names: the title approved reads as it is stored.
func TestInvisibleCharactersAreNeutralizedInTitles(t *testing.T) {
	raw := `{"kind":"propose_actions","answer":"A","confidence":0.9,"actions":[{"type":"create_board_with_cards","board":{"name":"Sh\u200bip\u202e","goal":"G"},
"cards":[{"temp_id":"c1","title":"Pay \u202eecnavda\u202c invoice\ufeff","body":"B","assignee":"Coder","status":"Backlog"}]}]}`
	res := plan.CheckJSON([]byte(raw), plan.Options{})
	if !res.Valid {
		t.Fatalf("invalid: %+v", res.Errors)
	}
	a := res.Plan.Actions[0]
	if a.Board.Name != "Ship" || a.Cards[0].Title != "Pay ecnavda invoice" {
		t.Fatalf("name %q, title %q", a.Board.Name, a.Cards[0].Title)
	}
}

// A plan's update_card title is a title like any other: its invisible
// characters go as a new card's do.
func TestUpdateCardTitleIsNeutralized(t *testing.T) {
	raw := `{"kind":"propose_actions","answer":"A","confidence":0.9,"actions":[{"type":"update_card","card":"NEWS-1","title":"Pay \u202eecnavda\u202c invoice\u200b"}]}`
	res := plan.CheckJSON([]byte(raw), plan.Options{HasTargetBoard: true})
	if !res.Valid {
		t.Fatalf("invalid: %+v", res.Errors)
	}
	if got := *res.Plan.Actions[0].Title; got != "Pay ecnavda invoice" {
		t.Fatalf("title %q", got)
	}
}
