package demomodel_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/demomodel"
	"github.com/bobnet/bobnet/run"
)

// TestDemoModelPlansThroughTheRealClient: BobNet's own model client, asked
// through the demo model, gets valid labelled outputs of each kind, plain
// and streamed.
func TestDemoModelPlansThroughTheRealClient(t *testing.T) {
	t.Parallel()
	m, err := demomodel.Load("../../testdata/plans", "../../testdata/demo/articles", 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	for _, stream := range []planner.StreamMode{planner.StreamOff, planner.StreamOn} {
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
			if out.Tokens != 2 {
				t.Errorf("stream %v, %q: %d tokens, want the 2 its usage says, streamed or not", stream, tc.msg, out.Tokens)
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
			// The newspaper runs every morning.
			if sc := env.Schedule(); tc.kind == plan.KindProposeActions && (sc == nil || sc.Cron != "0 6 * * *" || sc.Timezone != "UTC") {
				t.Errorf("stream %v, %q: the plan schedules %+v, want daily at 06:00 UTC", stream, tc.msg, sc)
			}
		}
	}
}

// TestDemoModelWritesArticlesAndAnswersTheProbe: a run's prompt to work a
// card (run.Messages, as the run worker builds it) gets a canned Markdown
// article chosen by the card's title, the same each time, never the plan;
// BobNet's start-up probe (the models list) is answered.
func TestDemoModelWritesArticlesAndAnswersTheProbe(t *testing.T) {
	t.Parallel()
	m, err := demomodel.Load("../../testdata/plans", "../../testdata/demo/articles", 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	c := planner.NewClient(planner.ClientConfig{BaseURL: srv.URL + "/v1", Model: demomodel.Name, MaxRetries: -1, Timeout: 10 * time.Second},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := c.Ping(context.Background()); err != nil {
		t.Fatalf("the start-up probe: %v", err)
	}
	var researcher planner.Profile
	for _, p := range planner.DefaultProfiles() {
		if p.Name == "Researcher" {
			researcher = p
		}
	}
	write := func(title string, feedback string) string {
		t.Helper()
		job := board.RunJob{Card: board.Card{Handle: "NEWS-3", Title: title, Body: "Check every claim."}, Feedback: feedback,
			Inputs: []board.RunCard{{Handle: "NEWS-1", Title: "Define daily topic and source policy", Output: "## Policy"}}}
		out, _, err := c.Write(context.Background(), run.Messages(researcher, job))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct{ title, want string }{
		{"Researcher B: skeptical source validation", "## Checking the claims"},
		{"Synthesize the edition as editor", "# The Morning Edition"},
		{"Define daily topic and source policy", "## Today's topic and source policy"},
		{"Final review of the edition", "## Final review"},
	} {
		out := write(tc.title, "")
		if !strings.HasPrefix(out, demomodel.ArticleLabel+"\n\n") || !strings.Contains(out, tc.want) || strings.Contains(out, "propose_actions") {
			t.Errorf("%q: %q, want the labelled article %q", tc.title, out, tc.want)
		}
		if again := write(tc.title, "cite every source"); again != out {
			t.Errorf("%q sent back: another article %q", tc.title, again)
		}
	}
	// A title no article names still gets one, the same each time.
	if a, b := write("Something else entirely", ""), write("Something else entirely", ""); a != b || !strings.HasPrefix(a, demomodel.ArticleLabel) {
		t.Errorf("unnamed title: %q then %q", a, b)
	}
	// A planning request that mentions a card is still planned.
	out, err := c.Plan(context.Background(), planner.PromptInput{Message: "Card NEWS-3. plan our daily research newspaper"}, plan.Options{Profiles: []string{"Coder", "Planner", "Researcher", "Reviewer"}})
	if err != nil || out.Result.Plan.Kind != plan.KindProposeActions {
		t.Fatalf("plan: %+v, %v", out, err)
	}
}

func TestDemoModelNeedsItsArticles(t *testing.T) {
	t.Parallel()
	if _, err := demomodel.Load("../../testdata/plans", t.TempDir(), 0); err == nil || !strings.Contains(err.Error(), "no canned articles") {
		t.Fatalf("no articles: %v", err)
	}
}

// A paced model streams its plan in many pieces over its pace, so a demo
// shows the draft card by card; joined, they are the plan it answers
// unstreamed.
func TestPacedStreamComesInPieces(t *testing.T) {
	const pace = 400 * time.Millisecond
	m, err := demomodel.Load("../../testdata/plans", "../../testdata/demo/articles", pace)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	defer srv.Close()
	cfg := openai.DefaultConfig("demo")
	cfg.BaseURL = srv.URL + "/v1"
	client := openai.NewClientWithConfig(cfg)
	req := openai.ChatCompletionRequest{Model: demomodel.Name, Stream: true,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "plan our daily research newspaper"}}}
	start := time.Now()
	stream, err := client.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var got strings.Builder
	pieces := 0
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) > 0 && resp.Choices[0].Delta.Content != "" {
			pieces++
			got.WriteString(resp.Choices[0].Delta.Content)
		}
	}
	if took := time.Since(start); took < pace*3/4 {
		t.Errorf("the stream took %s; want about its pace of %s", took, pace)
	}
	if pieces < 10 {
		t.Errorf("%d pieces; want the plan in many", pieces)
	}
	if want := m.Choose("plan our daily research newspaper"); got.String() != want {
		t.Errorf("the pieces joined differ from the plan answered unstreamed")
	}
}
