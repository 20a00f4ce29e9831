package deploy

import (
	"os"
	"testing"

	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
)

// TestNewspaperProfiles: the example profile set loads, names every
// assignee the newspaper plan uses, and runs the editor, researchers and
// reviewer on the model while people build the website.
func TestNewspaperProfiles(t *testing.T) {
	t.Parallel()
	ps, err := planner.LoadProfiles("examples/newspaper-profiles")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Planner": "model", "Researcher": "model", "Reviewer": "model", "Coder": ""}
	if len(ps) != len(want) {
		t.Fatalf("profiles = %v", planner.ProfileNames(ps))
	}
	for _, p := range ps {
		runner, ok := want[p.Name]
		if !ok || p.Runner != runner || p.Body == "" {
			t.Errorf("%s: runner %q, want %q", p.Name, p.Runner, runner)
		}
	}
	env, err := os.ReadFile("../testdata/plans/newspaper.json")
	if err != nil {
		t.Fatal(err)
	}
	res := planner.Check(env, plan.Options{Profiles: planner.ProfileNames(ps)})
	if !res.Valid || len(res.Warnings) != 0 {
		t.Fatalf("the newspaper plan against these profiles: %+v %+v", res.Errors, res.Warnings)
	}
}
