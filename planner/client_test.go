package planner_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	openai "github.com/sashabaranov/go-openai"
)

var opts = plan.Options{Profiles: []string{"Coder", "Planner", "Researcher", "Reviewer"}}

func newClient(url string, mod func(*planner.ClientConfig)) *planner.Client {
	cfg := planner.ClientConfig{BaseURL: url, Model: "test-model", Backoff: time.Millisecond, Timeout: 10 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	return planner.NewClient(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func TestClientPlans(t *testing.T) {
	t.Parallel()
	plan := plannertest.NewspaperPlan(t)
	tests := []struct {
		name   string
		stream bool
		reply  plannertest.Reply
	}{
		{"openai", false, plannertest.Reply{Content: plan}},
		{"openai streamed", true, plannertest.Reply{Content: plan, Chunks: 40}},
		{"ollama", false, plannertest.Reply{Content: plan, Ollama: true}},
		{"ollama streamed", true, plannertest.Reply{Content: "```json\n" + plan + "\n```", Ollama: true, Chunks: 7}},
		{"reasoning model", false, plannertest.Reply{Content: "<think>Ten cards, thirteen links.</think>\n" + plan}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := plannertest.NewServer(t, tt.reply)
			mode := planner.StreamOff
			if tt.stream {
				mode = planner.StreamOn
			}
			c := newClient(srv.URL(), func(c *planner.ClientConfig) { c.Stream = mode })
			out, err := c.Plan(context.Background(), planner.PromptInput{Message: "plan our daily research newspaper", Profiles: planner.DefaultProfiles()}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !out.Result.Valid || out.Result.Stats.Cards != 10 || out.Result.Stats.Links != 13 || out.Repaired {
				t.Fatalf("outcome = %+v", out.Result)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].Stream != tt.stream || reqs[0].ResponseFormat == nil || reqs[0].Model != "test-model" {
				t.Fatalf("requests = %+v", reqs)
			}
			if got := plannertest.LastUserMessage(reqs[0]); got != "plan our daily research newspaper" {
				t.Errorf("user message = %q", got)
			}
		})
	}
}

func TestClientRetriesThenSucceeds(t *testing.T) {
	t.Parallel()
	srv := plannertest.NewServer(t,
		plannertest.Reply{Status: http.StatusTooManyRequests, Message: "rate limited"},
		plannertest.Reply{Status: http.StatusServiceUnavailable},
		plannertest.Reply{Content: `{"kind":"answer","answer":"Hello."}`})
	out, err := newClient(srv.URL(), nil).Plan(context.Background(), planner.PromptInput{Message: "hi"}, opts)
	if err != nil || out.Result.Kind != plan.KindAnswer {
		t.Fatalf("out = %+v, err = %v", out, err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("requests = %d, want 3", n)
	}
}

func TestClientGivesUpAfterBoundedRetries(t *testing.T) {
	t.Parallel()
	srv := plannertest.NewServer(t)
	srv.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Status: 502} })
	_, err := newClient(srv.URL(), func(c *planner.ClientConfig) { c.MaxRetries = 2 }).Plan(context.Background(), planner.PromptInput{Message: "hi"}, opts)
	if !errors.Is(err, planner.ErrUnreachable) {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("requests = %d, want 1 + 2 retries", n)
	}
}

func TestClientUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = newClient("http://"+addr+"/v1", func(c *planner.ClientConfig) { c.MaxRetries = 1 }).Plan(context.Background(), planner.PromptInput{Message: "hi"}, opts)
	if !errors.Is(err, planner.ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v", err)
	}
}

func TestClientClientErrorIsNotRetried(t *testing.T) {
	t.Parallel()
	srv := plannertest.NewServer(t, plannertest.Reply{Status: http.StatusUnauthorized, Message: "invalid api key"})
	_, err := newClient(srv.URL(), nil).Plan(context.Background(), planner.PromptInput{Message: "hi"}, opts)
	if !errors.Is(err, planner.ErrUnreachable) || !strings.Contains(err.Error(), "invalid api key") || len(srv.Requests()) != 1 {
		t.Fatalf("err = %v, requests = %d", err, len(srv.Requests()))
	}
}

func TestClientRepairsOnce(t *testing.T) {
	t.Parallel()
	srv := plannertest.NewServer(t,
		plannertest.Reply{Content: "Sure! I'll get right on that."},
		plannertest.Reply{Content: plannertest.NewspaperPlan(t)})
	out, err := newClient(srv.URL(), nil).Plan(context.Background(), planner.PromptInput{Message: "plan it"}, opts)
	if err != nil || !out.Repaired || out.Result.Stats.Cards != 10 {
		t.Fatalf("out = %+v, err = %v", out.Result, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d", len(reqs))
	}
	repair := plannertest.LastUserMessage(reqs[1])
	if !strings.Contains(repair, "no JSON object") {
		t.Errorf("repair request does not send the errors back: %q", repair)
	}
	if msgs := reqs[1].Messages; msgs[len(msgs)-2].Content != "Sure! I'll get right on that." {
		t.Errorf("repair request lacks the bad output")
	}
}

func TestClientInvalidTwice(t *testing.T) {
	t.Parallel()
	bad1 := `{"kind":"propose_actions","actions":[{"type":"delete_board","board":{"name":"All"}}]}`
	bad2 := "still not JSON"
	srv := plannertest.NewServer(t, plannertest.Reply{Content: bad1}, plannertest.Reply{Content: bad2})
	_, err := newClient(srv.URL(), nil).Plan(context.Background(), planner.PromptInput{Message: "delete everything"}, opts)
	var inv *planner.InvalidOutputError
	if !errors.Is(err, planner.ErrInvalidOutput) || !errors.As(err, &inv) {
		t.Fatalf("err = %v", err)
	}
	if len(inv.Raw) != 2 || inv.Raw[0] != bad1 || inv.Raw[1] != bad2 || len(inv.Errors) == 0 {
		t.Errorf("invalid output error = %+v", inv)
	}
	if !strings.Contains(plannertest.LastUserMessage(srv.Requests()[1]), `"delete_board" is not allowed`) {
		t.Error("repair request does not name the destructive action")
	}
}

func TestClientTimeout(t *testing.T) {
	t.Parallel()
	srv := plannertest.NewServer(t, plannertest.Reply{Hang: true})
	start := time.Now()
	_, err := newClient(srv.URL(), func(c *planner.ClientConfig) { c.Timeout = 200 * time.Millisecond }).Plan(context.Background(), planner.PromptInput{Message: "hi"}, opts)
	if !errors.Is(err, planner.ErrTimeout) {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("timeout took %s", time.Since(start))
	}
}

func TestClientWithoutJSONMode(t *testing.T) {
	t.Parallel()
	answer := `{"kind":"answer","answer":"ok"}`
	srv := plannertest.NewServer(t)
	srv.Handle(func(openai.ChatCompletionRequest) plannertest.Reply {
		return plannertest.Reply{Content: answer, RejectJSONMode: true}
	})
	c := newClient(srv.URL(), nil)
	for range 2 {
		if _, err := c.Plan(context.Background(), planner.PromptInput{Message: "hi"}, opts); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	// First call: refused with JSON mode, then asked plainly; the second
	// call remembers and asks plainly at once.
	if len(reqs) != 3 || reqs[0].ResponseFormat == nil || reqs[1].ResponseFormat != nil || reqs[2].ResponseFormat != nil {
		t.Fatalf("requests = %d", len(reqs))
	}
}

func TestClientPing(t *testing.T) {
	t.Parallel()
	srv := plannertest.NewServer(t)
	if err := newClient(srv.URL(), nil).Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := newClient("http://127.0.0.1:1/v1", nil).Ping(context.Background()); !errors.Is(err, planner.ErrUnreachable) {
		t.Fatalf("err = %v", err)
	}
}
