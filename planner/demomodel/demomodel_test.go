package demomodel_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/demomodel"
)

// TestDemoModelPlansThroughTheRealClient: BobNet's own model client, asked
// through the demo model, gets valid labelled outputs of each kind, plain
// and streamed.
func TestDemoModelPlansThroughTheRealClient(t *testing.T) {
	t.Parallel()
	m, err := demomodel.Load("../../testdata/plans")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	for _, stream := range []bool{false, true} {
		c := planner.NewClient(planner.ClientConfig{BaseURL: srv.URL + "/v1", Model: demomodel.Name, Stream: stream, MaxRetries: -1},
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		for _, tc := range []struct {
			msg  string
			kind plan.Kind
		}{
			{"plan our daily research newspaper with three researchers", plan.KindProposeActions},
			{"what is a kanban board?", plan.KindAnswer},
			{"please delete the old board", plan.KindRefuse},
			{"newspaper", plan.KindClarify},
		} {
			out, err := c.Plan(context.Background(), planner.PromptInput{Message: tc.msg}, plan.Options{Profiles: []string{"Coder", "Planner", "Researcher", "Reviewer"}})
			if err != nil {
				t.Fatalf("stream %v, %q: %v", stream, tc.msg, err)
			}
			env := out.Result.Plan
			if env.Kind != tc.kind {
				t.Errorf("stream %v, %q: kind %s, want %s", stream, tc.msg, env.Kind, tc.kind)
			}
			labelled := strings.Contains(env.Answer, demomodel.Label)
			for _, a := range env.Assumptions {
				labelled = labelled || a == demomodel.Label
			}
			if !labelled {
				t.Errorf("stream %v, %q: output not labelled as canned: %+v", stream, tc.msg, env)
			}
		}
	}
}
