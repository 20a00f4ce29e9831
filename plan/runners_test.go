package plan_test

import (
	"testing"

	"github.com/bobnet/bobnet/plan"
)

func TestRunnersFor(t *testing.T) {
	rs := plan.Runners{ByName: map[string]plan.Runner{"researcher": {Name: "model"}}, Others: plan.Runner{Name: "hook:cms", NoReview: true}}
	for assignee, want := range map[string]plan.Runner{
		"Researcher":    {Name: "model"},
		"  researcher ": {Name: "model"},
		"Editor":        {Name: "hook:cms", NoReview: true},
	} {
		if got := rs.For(assignee); got != want {
			t.Errorf("%q: %+v, want %+v", assignee, got, want)
		}
	}
	if got := (plan.Runners{}).For("anyone"); got != (plan.Runner{}) {
		t.Errorf("zero Runners: %+v, want people, reviewed", got)
	}
}
