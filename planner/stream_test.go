package planner_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
)

func TestParseStreamMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]planner.StreamMode{"auto": planner.StreamAuto, " ON ": planner.StreamOn, "off": planner.StreamOff} {
		if got, err := planner.ParseStreamMode(in); err != nil || got != want {
			t.Errorf("ParseStreamMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yes", "true", "1", "stream"} {
		if got, err := planner.ParseStreamMode(in); err == nil {
			t.Errorf("ParseStreamMode(%q) = %q, want an error", in, got)
		}
	}
}

// In auto mode a server that will not stream (it refuses the streamed
// request, or answers it with a plain JSON answer) is asked plainly at
// once, and plainly from then on; in on mode it is not.
func TestStreamAutoFallsBackAndRemembers(t *testing.T) {
	t.Parallel()
	answer := `{"kind":"answer","answer":"Hello."}`
	for name, refusal := range map[string]plannertest.Reply{
		"refused 404":      {Content: answer, RefuseStream: http.StatusNotFound},
		"refused 501":      {Content: answer, RefuseStream: http.StatusNotImplemented},
		"answered plainly": {Content: answer, IgnoreStream: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := plannertest.NewServer(t, refusal, refusal, refusal)
			c := newClient(srv.URL(), func(c *planner.ClientConfig) { c.Stream = planner.StreamAuto })
			if !c.Streams() {
				t.Fatal("auto does not ask for a stream at first")
			}
			for range 2 {
				out, err := c.Plan(context.Background(), planner.PromptInput{Message: "hi"}, opts)
				if err != nil || out.Result.Plan == nil || out.Result.Plan.Answer != "Hello." {
					t.Fatalf("out = %+v, err = %v", out, err)
				}
			}
			var streamed []bool
			for _, r := range srv.Requests() {
				streamed = append(streamed, r.Stream)
			}
			if len(streamed) != 3 || !streamed[0] || streamed[1] || streamed[2] {
				t.Fatalf("requests streamed = %v, want [true false false]: one refused stream, then plain ones", streamed)
			}
			if c.Streams() {
				t.Error("the client still asks for streams")
			}
		})
	}
	t.Run("on does not fall back", func(t *testing.T) {
		t.Parallel()
		srv := plannertest.NewServer(t, plannertest.Reply{Content: answer, RefuseStream: http.StatusNotFound})
		c := newClient(srv.URL(), func(c *planner.ClientConfig) { c.Stream = planner.StreamOn; c.MaxRetries = -1 })
		if _, err := c.Plan(context.Background(), planner.PromptInput{Message: "hi"}, opts); !errors.Is(err, planner.ErrUnreachable) {
			t.Fatalf("err = %v, want the refusal", err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("requests = %d, want 1", n)
		}
	})
	t.Run("a failure that is not about streaming is not remembered", func(t *testing.T) {
		t.Parallel()
		srv := plannertest.NewServer(t, plannertest.Reply{Status: http.StatusBadRequest, Message: "model not found"}, plannertest.Reply{Content: answer})
		c := newClient(srv.URL(), func(c *planner.ClientConfig) { c.Stream = planner.StreamAuto; c.MaxRetries = -1 })
		if _, err := c.Plan(context.Background(), planner.PromptInput{Message: "hi"}, opts); err == nil {
			t.Fatal("a refused request planned")
		}
		if !c.Streams() {
			t.Error("a refusal that is not about streaming turned streaming off")
		}
		if _, err := c.Plan(context.Background(), planner.PromptInput{Message: "hi"}, opts); err != nil {
			t.Fatal(err)
		}
		if reqs := srv.Requests(); len(reqs) != 2 || !reqs[1].Stream {
			t.Errorf("requests = %d, the second streamed = %v; want 2, streamed", len(reqs), len(reqs) == 2 && reqs[1].Stream)
		}
	})
}
