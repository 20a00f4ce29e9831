package planner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/plan"
)

var defaultNames = []string{"Coder", "Planner", "Researcher", "Reviewer"}

// expectation is one entry of testdata/plans/expect.json.
type expectation struct {
	Valid    bool `json:"valid"`
	Cards    int  `json:"cards"`
	Links    int  `json:"links"`
	Errors   []struct{ Path, Contains string }
	Warnings []struct{ Path, Contains string }
}

func loadExpectations(t *testing.T) map[string]expectation {
	t.Helper()
	b, err := os.ReadFile("../testdata/plans/expect.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]expectation
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCheckTestdata(t *testing.T) {
	t.Parallel()
	expect := loadExpectations(t)
	files, err := filepath.Glob("../testdata/plans/*")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range files {
		name := filepath.Base(f)
		if name == "expect.json" {
			continue
		}
		want, ok := expect[name]
		if !ok {
			t.Errorf("%s has no entry in expect.json", name)
			continue
		}
		seen++
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res := Check(raw, plan.Options{Profiles: defaultNames})
			if res.Valid != want.Valid {
				t.Fatalf("valid = %v, want %v; errors: %+v", res.Valid, want.Valid, res.Errors)
			}
			if res.Valid && len(res.Errors) != 0 {
				t.Errorf("valid with errors %+v", res.Errors)
			}
			if want.Cards > 0 && (res.Stats.Cards != want.Cards || res.Stats.Links != want.Links) {
				t.Errorf("stats = %+v, want %d cards and %d links", res.Stats, want.Cards, want.Links)
			}
			for _, e := range want.Errors {
				if !hasIssue(res.Errors, e.Path, e.Contains) {
					t.Errorf("no error at %q containing %q; got %+v", e.Path, e.Contains, res.Errors)
				}
			}
			for _, e := range want.Warnings {
				if !hasIssue(res.Warnings, e.Path, e.Contains) {
					t.Errorf("no warning at %q containing %q; got %+v", e.Path, e.Contains, res.Warnings)
				}
			}
		})
	}
	if seen < 30 {
		t.Errorf("only %d testdata plans checked", seen)
	}
}

func hasIssue(issues []plan.Issue, path, contains string) bool {
	for _, is := range issues {
		if is.Path == path && strings.Contains(is.Message, contains) {
			return true
		}
	}
	return false
}

func TestCheckNormalizes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../testdata/plans/valid-lowercase-status.json")
	if err != nil {
		t.Fatal(err)
	}
	res := Check(raw, plan.Options{Profiles: defaultNames})
	if !res.Valid {
		t.Fatalf("errors: %+v", res.Errors)
	}
	a := res.Plan.Actions[0]
	if a.Cards[0].Status != plan.StatusReady {
		t.Errorf("status not normalized: %q", a.Cards[0].Status)
	}
	if a.Cards[1].WorkspaceMode != plan.WorkspaceDirect {
		t.Errorf("workspace mode default: %q", a.Cards[1].WorkspaceMode)
	}
	for _, c := range a.Cards {
		if len(c.DependsOn) != 0 {
			t.Errorf("card %s keeps depends_on %v after folding", c.TempID, c.DependsOn)
		}
	}
	if len(a.Links) != 13 {
		t.Fatalf("links = %d, want 13", len(a.Links))
	}
	want := map[plan.Link]bool{{Card: "research_a", DependsOn: "topic_policy"}: true, {Card: "website", DependsOn: "synthesis"}: true, {Card: "synthesis", DependsOn: "research_b"}: true}
	for _, l := range a.Links {
		delete(want, l)
	}
	if len(want) != 0 {
		t.Errorf("links missing: %v", want)
	}
}

func TestCheckAssigneeCanonicalCase(t *testing.T) {
	t.Parallel()
	raw := `{"kind":"propose_actions","actions":[{"type":"create_board_with_cards","board":{"name":"B"},"cards":[{"temp_id":"a","title":"T","body":"B","assignee":"coder","status":"Backlog"}]}]}`
	res := Check([]byte(raw), plan.Options{Profiles: defaultNames})
	if !res.Valid || res.Plan.Actions[0].Cards[0].Assignee != "Coder" || len(res.Warnings) != 0 {
		t.Fatalf("res = %+v", res)
	}
}

func TestCheckCardActionsWithTargetBoard(t *testing.T) {
	t.Parallel()
	raw := `{"kind":"propose_actions","actions":[{"type":"create_card_batch","cards":[
		{"temp_id":"a","title":"One","body":"B","assignee":"Coder","status":"Ready"},
		{"temp_id":"b","title":"Two","body":"B","assignee":"Coder","status":"Backlog","depends_on":["a"]}]}]}`
	if res := Check([]byte(raw), plan.Options{Profiles: defaultNames}); res.Valid {
		t.Fatal("card batch without a target board validated")
	}
	res := Check([]byte(raw), plan.Options{Profiles: defaultNames, HasTargetBoard: true})
	if !res.Valid || res.Stats != (plan.Stats{Cards: 2, Links: 1, Actions: 1}) {
		t.Fatalf("res = %+v", res)
	}
}

func TestCheckDestructiveRefusedWhole(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../testdata/plans/invalid-destructive.json")
	if err != nil {
		t.Fatal(err)
	}
	res := Check(raw, plan.Options{Profiles: defaultNames})
	if res.Valid {
		t.Fatal("a plan with delete_board validated")
	}
	// The valid part is still shown, but the plan as a whole is refused.
	if len(res.Errors) != 1 || res.Stats.Cards != 10 {
		t.Errorf("errors = %+v, stats = %+v", res.Errors, res.Stats)
	}
}

func TestCheckReportsEveryProblem(t *testing.T) {
	t.Parallel()
	raw := `{"kind":"propose_actions","actions":[{"type":"create_board_with_cards","board":{"name":"B"},"cards":[
		{"temp_id":"a","title":"","body":"B","status":"Delete"},
		{"temp_id":"a","title":"T","body":"","status":"Ready","workspace_mode":"Cloud"}],
		"links":[{"card":"a","depends_on":"zz"}]}]}`
	res := Check([]byte(raw), plan.Options{Profiles: defaultNames})
	want := []string{"actions[0].cards[0].title", "actions[0].cards[0].status", "actions[0].cards[1].temp_id",
		"actions[0].cards[1].body", "actions[0].cards[1].workspace_mode", "actions[0].links[0].depends_on"}
	for _, p := range want {
		found := false
		for _, e := range res.Errors {
			found = found || e.Path == p
		}
		if !found {
			t.Errorf("no error at %s; got %+v", p, res.Errors)
		}
	}
}

func TestCheckTooLarge(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"kind":"answer","answer":"` + strings.Repeat("a", MaxRawOutput) + `"}`)
	res := Check(raw, plan.Options{})
	if res.Valid || len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "256 KiB") {
		t.Fatalf("res = %+v", res.Errors)
	}
}

func TestCheckLengthCaps(t *testing.T) {
	t.Parallel()
	raw := `{"kind":"propose_actions","actions":[{"type":"create_board_with_cards","board":{"name":"` + strings.Repeat("n", 200) + `"},"cards":[
		{"temp_id":"a","title":"` + strings.Repeat("t", 201) + `","body":"B","assignee":"Coder","status":"Ready"}]}]}`
	res := Check([]byte(raw), plan.Options{Profiles: defaultNames})
	if !hasIssue(res.Errors, "actions[0].board.name", "longer than 120") || !hasIssue(res.Errors, "actions[0].cards[0].title", "longer than 200") {
		t.Fatalf("errors = %+v", res.Errors)
	}
}
