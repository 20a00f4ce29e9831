package bot_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

// shown is one thing a drafting surface was asked to show, in order.
type shown struct {
	at      time.Time
	what    string // "draft", "reply" or "preview"
	request board.RequestID
	thread  board.Thread
	cards   int
	title   string
	reply   board.Reply
}

// drafter is a surface that shows drafts, recording everything in one
// ordered log.
type drafter struct {
	bottest.Poster
	mu  sync.Mutex
	log []shown
}

func (d *drafter) add(s shown) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s.at = time.Now()
	d.log = append(d.log, s)
}

func (d *drafter) Draft(_ context.Context, dr bot.Draft) error {
	for _, c := range dr.Cards {
		if c.Title == "" {
			panic("a draft card without a title")
		}
	}
	d.add(shown{what: "draft", request: dr.Request, thread: dr.Thread, cards: len(dr.Cards), title: dr.Title})
	return nil
}

func (d *drafter) Reply(ctx context.Context, t board.Thread, r board.Reply) error {
	d.add(shown{what: "reply", request: r.Request, thread: t, reply: r})
	return d.Poster.Reply(ctx, t, r)
}

func (d *drafter) PostPreview(ctx context.Context, p board.Proposal) (board.MessageRef, error) {
	d.add(shown{what: "preview", request: p.RequestID, thread: p.Thread, cards: p.Plan.Stats().Cards})
	return d.Poster.PostPreview(ctx, p)
}

func (d *drafter) snapshot() []shown {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]shown(nil), d.log...)
}

// of is what was shown for request id.
func (d *drafter) of(id board.RequestID) []shown {
	var out []shown
	for _, s := range d.snapshot() {
		if s.request == id {
			out = append(out, s)
		}
	}
	return out
}

// startDrafting starts an engine whose console surface shows drafts and
// whose model calls time out after timeout.
func startDrafting(t *testing.T, timeout time.Duration) (*bottest.Env, *drafter) {
	t.Helper()
	d := &drafter{}
	model := plannertest.NewServer(t)
	wrap := func(deps *bot.Deps) {
		deps.Planner = planner.NewClient(planner.ClientConfig{BaseURL: model.URL(), Model: "test-model", Backoff: time.Millisecond,
			Timeout: timeout, Stream: planner.StreamAuto}, storetest.Logger(t))
	}
	env := bottest.New(t, bottest.WithModel(model), bottest.WithDeps(wrap), bottest.WithConsole(bot.Registration{Poster: d, Drafts: d}))
	return env, d
}

func opts() plan.Options {
	return plan.Options{Profiles: planner.ProfileNames(planner.DefaultProfiles())}
}

// slowly is content streamed over about three seconds.
func slowly(content string) plannertest.Reply {
	return plannertest.Reply{Content: content, Chunks: 30, ChunkDelay: 100 * time.Millisecond}
}

// checkDrafts checks what was shown for request id: drafts (at least
// min) for its thread, growing, at most one a second, and then exactly
// one answer (what), naming the request, after every draft.
func checkDrafts(t *testing.T, d *drafter, id board.RequestID, minDrafts int, what string) shown {
	t.Helper()
	log := d.of(id)
	drafts := 0
	var last shown
	for i, s := range log {
		switch {
		case s.what == "draft" && i > 0 && log[i-1].what != "draft":
			t.Fatalf("a draft after the answer: %+v", log)
		case s.what == "draft":
			if s.thread != general {
				t.Errorf("draft in thread %+v", s.thread)
			}
			if drafts > 0 {
				if s.cards <= last.cards && s.title == last.title {
					t.Errorf("draft %d did not grow: %d cards after %d", drafts, s.cards, last.cards)
				}
				if gap := s.at.Sub(last.at); gap < bot.DraftEvery-50*time.Millisecond {
					t.Errorf("drafts %s apart, want at most one a second", gap)
				}
			}
			drafts++
			last = s
		case i != len(log)-1:
			t.Fatalf("answered more than once: %+v", log)
		case s.what != what:
			t.Fatalf("answer = %+v, want a %s", s, what)
		}
	}
	if drafts < minDrafts {
		t.Fatalf("%d drafts, want at least %d: %+v", drafts, minDrafts, log)
	}
	if len(log) == 0 || log[len(log)-1].what != what {
		t.Fatalf("no %s answered request %s: %+v", what, id, log)
	}
	return log[len(log)-1]
}

// A plan streamed over about three seconds is shown card by card, at most
// once a second, under the board's title, and the preview follows the
// last draft, naming the request.
func TestDraftsShowThePlanWhileTheModelWritesIt(t *testing.T) {
	t.Parallel()
	env, d := startDrafting(t, 20*time.Second)
	env.Model.Push(slowly(plannertest.NewspaperPlan(t)))
	id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	if st := env.WaitRequest(t, id); st.ProposalID == "" {
		t.Fatalf("request = %+v", st)
	}
	env.WaitIdle(t)
	time.Sleep(1500 * time.Millisecond) // a draft still waiting its turn would show by now
	checkDrafts(t, d, id, 2, "preview")
	drafts := d.of(id)
	if first := drafts[0]; first.cards >= 10 {
		t.Errorf("the first draft came with all %d cards; want it while the model writes", first.cards)
	}
	for _, s := range drafts {
		if s.what == "draft" && s.cards > 0 && s.title != "Daily Research Newspaper" {
			t.Errorf("draft title %q", s.title)
		}
	}
}

// Whatever the model ends with, the request's drafts stop before its
// answer, and the answer names the request so the surface turns the
// draft into it.
func TestEveryEndingFollowsTheDraft(t *testing.T) {
	t.Parallel()
	newspaper := plannertest.NewspaperPlan(t)
	asAnswer := strings.Replace(newspaper, `"kind": "propose_actions"`, `"kind": "answer"`, 1)
	invalid := strings.Replace(newspaper, `"status": "Backlog"`, `"status": "Deleted"`, 1)
	for _, raw := range []string{asAnswer, invalid} {
		if planner.Check([]byte(raw), opts()).Valid {
			t.Fatal("the broken plan is valid")
		}
	}
	for _, tc := range []struct {
		name    string
		replies []plannertest.Reply
		timeout time.Duration
		drafts  int
		what    string
		kind    board.ReplyKind
	}{
		{"answer", []plannertest.Reply{slowly(asAnswer), {Content: plannertest.Testdata(t, "plans/valid-answer.json")}}, 0, 2, "reply", board.ReplyAnswer},
		{"clarify", []plannertest.Reply{slowly(asAnswer), {Content: plannertest.Testdata(t, "plans/valid-clarify.json")}}, 0, 2, "reply", board.ReplyClarify},
		{"refuse", []plannertest.Reply{slowly(asAnswer), {Content: plannertest.Testdata(t, "plans/valid-refuse.json")}}, 0, 2, "reply", board.ReplyRefuse},
		{"invalid after repair", []plannertest.Reply{slowly(invalid), slowly(invalid)}, 0, 2, "reply", board.ReplyError},
		{"broken JSON", []plannertest.Reply{slowly(newspaper[:len(newspaper)*2/3] + `"}]}}`), {Content: "no"}}, 0, 2, "reply", board.ReplyError},
		{"model slower than the timeout", []plannertest.Reply{{Content: newspaper, Chunks: 40, ChunkDelay: 200 * time.Millisecond}}, 3 * time.Second, 1, "reply", board.ReplyError},
		{"proposal", []plannertest.Reply{slowly(newspaper)}, 0, 2, "preview", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 20 * time.Second
			}
			env, d := startDrafting(t, timeout)
			env.Model.Push(tc.replies...)
			id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
			if err != nil {
				t.Fatal(err)
			}
			env.WaitRequest(t, id)
			env.WaitIdle(t)
			time.Sleep(1500 * time.Millisecond)
			got := checkDrafts(t, d, id, tc.drafts, tc.what)
			if tc.what == "reply" && got.reply.Kind != tc.kind {
				t.Errorf("reply = %+v, want %s", got.reply, tc.kind)
			}
		})
	}
	t.Run("revision", func(t *testing.T) {
		t.Parallel()
		env, d := startDrafting(t, 20*time.Second)
		env.Model.Push(plannertest.Reply{Content: newspaper}, slowly(newspaper))
		v1 := propose(t, env, "alice")
		rid, err := env.Engine.Revise(context.Background(), v1.ID, "alice", "one more researcher")
		if err != nil {
			t.Fatal(err)
		}
		if st := env.WaitRequest(t, rid); st.ProposalID == "" {
			t.Fatalf("revision = %+v", st)
		}
		env.WaitIdle(t)
		time.Sleep(1500 * time.Millisecond)
		checkDrafts(t, d, rid, 2, "preview")
	})
}

// A model whose stream stops at once draws no draft, and its answer
// still names the request.
func TestNoDraftWithoutCards(t *testing.T) {
	t.Parallel()
	env, d := startDrafting(t, 20*time.Second)
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply {
		return slowly(plannertest.Testdata(t, "plans/valid-answer.json"))
	})
	id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: "what is a kanban board?"})
	if err != nil {
		t.Fatal(err)
	}
	env.WaitRequest(t, id)
	env.WaitIdle(t)
	if got := checkDrafts(t, d, id, 0, "reply"); got.reply.Request != id || got.reply.Kind != board.ReplyAnswer {
		t.Errorf("reply = %+v", got.reply)
	}
	if n := len(d.of(id)); n != 1 {
		t.Errorf("shown %d things, want only the answer", n)
	}
}

// An answer that never asked the model (the channel is over its model
// budget) names its request too, and no draft was drawn for it.
func TestAnOverBudgetAnswerNamesItsRequest(t *testing.T) {
	t.Parallel()
	env, d := startDrafting(t, 20*time.Second)
	env.Model.Push(plannertest.Reply{Content: plannertest.NewspaperPlan(t), Tokens: 600})
	setPolicy(t, env, "console:general", board.Policy{Deciders: []string{"requester"}, Approvals: 1, SelfApproval: true, Budget: &board.Budget{TokensPerDay: 500}})
	ctx := context.Background()
	first, err := env.Engine.Submit(ctx, board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	env.WaitRequest(t, first)
	second, err := env.Engine.Submit(ctx, board.Request{Thread: general, User: "alice", Text: "plan another thing"})
	if err != nil {
		t.Fatal(err)
	}
	if st := env.WaitRequest(t, second); st.State != board.RequestFailed || st.Reply == nil || st.Reply.Request != second {
		t.Fatalf("over budget: %+v %+v", st, st.Reply)
	}
	env.WaitIdle(t)
	if got := checkDrafts(t, d, second, 0, "reply"); got.reply.Request != second || !strings.Contains(got.reply.Text, "model budget") {
		t.Errorf("reply = %+v", got.reply)
	}
	if n := len(d.of(second)); n != 1 {
		t.Errorf("shown %d things for the request over budget, want only its answer", n)
	}
}
