package planner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bobnet/bobnet/plan"
)

// FuzzCheck feeds arbitrary model output to the parser and validator. The
// seed corpus is every file in testdata/plans, so it runs in every go test.
func FuzzCheck(f *testing.F) {
	files, err := filepath.Glob("../testdata/plans/*")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("{\"kind\":\"propose_actions\",\"actions\":[{\"type\":\"create_card\",\"cards\":[{}]}]}"))
	f.Add([]byte("<think>{</think>{\"kind\":\"answer\",\"answer\":\"}\"}"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, opts := range []plan.Options{{Profiles: defaultNames}, {HasTargetBoard: true}} {
			res := Check(raw, opts)
			if res.Valid != (len(res.Errors) == 0) {
				t.Fatalf("valid = %v with %d errors", res.Valid, len(res.Errors))
			}
			if res.Errors == nil || res.Warnings == nil {
				t.Fatal("nil errors or warnings list")
			}
			if !res.Valid {
				continue
			}
			if res.Plan == nil {
				t.Fatal("valid without a plan")
			}
			if res.Stats != res.Plan.Stats() || res.Stats.Cards > plan.MaxCards {
				t.Fatalf("stats = %+v", res.Stats)
			}
			for _, a := range res.Plan.Actions {
				ids := map[string]bool{}
				for _, c := range a.Cards {
					if c.Status != plan.StatusBacklog && c.Status != plan.StatusReady {
						t.Fatalf("status %q passed", c.Status)
					}
					if c.WorkspaceMode != plan.WorkspaceDirect && c.WorkspaceMode != plan.WorkspaceScratch && c.WorkspaceMode != plan.WorkspaceWorktree {
						t.Fatalf("workspace mode %q passed", c.WorkspaceMode)
					}
					if len(c.DependsOn) != 0 {
						t.Fatal("depends_on not folded")
					}
					ids[c.TempID] = true
				}
				for _, l := range a.Links {
					if !ids[l.Card] || !ids[l.DependsOn] || l.Card == l.DependsOn {
						t.Fatalf("bad link %+v passed", l)
					}
				}
				deps, order := map[string][]string{}, []string{}
				for _, l := range a.Links {
					deps[l.Card] = append(deps[l.Card], l.DependsOn)
				}
				for _, c := range a.Cards {
					order = append(order, c.TempID)
				}
				if plan.FindCycle(deps, order) != nil {
					t.Fatal("cycle passed")
				}
			}
		}
	})
}
