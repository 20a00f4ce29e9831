package planner_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

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

// A streamed plan is told card by card while it comes, all before Plan
// returns; a plan asked plainly is told never.
func TestPlanTellsDraftsWhileStreaming(t *testing.T) {
	t.Parallel()
	newspaper := plannertest.NewspaperPlan(t)
	for _, mode := range []planner.StreamMode{planner.StreamOn, planner.StreamOff} {
		srv := plannertest.NewServer(t, plannertest.Reply{Content: newspaper, Chunks: 20, ChunkDelay: 10 * time.Millisecond})
		c := newClient(srv.URL(), func(c *planner.ClientConfig) { c.Stream = mode })
		var drafts []planner.Draft
		returned := false
		in := planner.PromptInput{Message: "plan", Profiles: planner.DefaultProfiles(), OnDraft: func(d planner.Draft) {
			if returned {
				t.Error("a draft after Plan returned")
			}
			drafts = append(drafts, d)
		}}
		out, err := c.Plan(context.Background(), in, opts)
		returned = true
		if err != nil || !out.Result.Valid {
			t.Fatalf("%s: %v %+v", mode, err, out.Result.Errors)
		}
		if mode == planner.StreamOff {
			if len(drafts) != 0 {
				t.Errorf("off: %d drafts", len(drafts))
			}
			continue
		}
		if len(drafts) < 5 {
			t.Fatalf("on: %d drafts, want one per piece with a new card or the title", len(drafts))
		}
		last := drafts[len(drafts)-1]
		if len(last.Cards) != 10 || last.Title != out.Result.Plan.Actions[0].Board.Name {
			t.Errorf("last draft: %d cards, title %q", len(last.Cards), last.Title)
		}
		for i := 1; i < len(drafts); i++ {
			if len(drafts[i].Cards) < len(drafts[i-1].Cards) {
				t.Errorf("draft %d has fewer cards than the one before", i)
			}
		}
	}
}

// A streamed answer's tokens count as a plain one's: the client asks for
// the usage (stream_options.include_usage), which OpenAI-compatible
// servers send only when asked.
func TestStreamAsksForUsage(t *testing.T) {
	t.Parallel()
	reply := plannertest.Reply{Content: `{"kind":"answer","answer":"Hello."}`, Tokens: 321}
	srv := plannertest.NewServer(t, reply)
	c := newClient(srv.URL(), func(c *planner.ClientConfig) { c.Stream = planner.StreamOn })
	out, err := c.Plan(context.Background(), planner.PromptInput{Message: "hi"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !reqs[0].Stream || reqs[0].StreamOptions == nil || !reqs[0].StreamOptions.IncludeUsage {
		t.Fatalf("requests = %+v, want one streamed request asking for its usage", reqs)
	}
	if out.Tokens != 321 {
		t.Errorf("tokens = %d, want the 321 the stream's usage said", out.Tokens)
	}
}
