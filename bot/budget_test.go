package bot_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
)

func TestModelBudget(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	plan := plannertest.NewspaperPlan(t)
	env.Model.Handle(func(req openai.ChatCompletionRequest) plannertest.Reply {
		// The "estimate" channel's server sends no usage.
		last := req.Messages[len(req.Messages)-1].Content
		return plannertest.Reply{Content: plan, Tokens: 600, NoUsage: strings.Contains(last, "estimate me")}
	})
	setPolicy(t, env, "console:general", board.Policy{Deciders: []string{"requester"}, Approvals: 1, SelfApproval: true, Budget: &board.Budget{TokensPerDay: 500}})
	ctx := context.Background()
	ask := func(ch, text string) board.RequestStatus {
		t.Helper()
		id, err := env.Engine.Submit(ctx, board.Request{Thread: board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: ch}}, User: "alice", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return env.WaitRequest(t, id)
	}
	// Under budget: planned, and the 600 tokens are recorded.
	if st := ask("general", newspaperRequest); st.ProposalID == "" {
		t.Fatalf("first request: %+v", st)
	}
	b, err := env.Engine.BudgetStatus(ctx, general.Channel)
	if err != nil || b.Used != 600 || b.Limit != 500 || !b.Over() {
		t.Fatalf("budget = %+v, %v", b, err)
	}
	calls := len(env.Model.Requests())

	// Over budget: a clear answer with the reset time, and no model call.
	st := ask("general", "plan another thing")
	if st.State != board.RequestFailed || st.Reply == nil || !strings.Contains(st.Reply.Text, "model budget") || !strings.Contains(st.Reply.Text, b.Resets.Format("2006-01-02 15:04 UTC")) {
		t.Fatalf("over budget: %+v %+v", st, st.Reply)
	}
	if n := len(env.Model.Requests()); n != calls {
		t.Fatalf("the model was called %d times over budget", n-calls)
	}
	// A run's runner is refused too, told when the budget resets.
	var spent *bot.BudgetSpentError
	if err := env.Engine.ModelBudget(ctx, "console:general"); !errors.Is(err, bot.ErrOverBudget) || !errors.As(err, &spent) || !spent.ResetsAt().Equal(b.Resets) ||
		!strings.Contains(bot.Explain(err), "resets at "+b.Resets.Format("15:04 UTC")) {
		t.Fatalf("a runner over budget: %v", err)
	}
	if err := env.Engine.ModelBudget(ctx, "console:elsewhere"); err != nil {
		t.Fatalf("a runner in a channel without a budget: %v", err)
	}
	tomorrow := time.Now().UTC().Add(24 * time.Hour)
	if !b.Resets.After(time.Now()) || b.Resets.After(tomorrow) || b.Resets.Hour() != 0 {
		t.Fatalf("resets at %s, want the next UTC midnight", b.Resets)
	}

	// Another channel is unaffected.
	if st := ask("other", newspaperRequest); st.ProposalID == "" {
		t.Fatalf("other channel: %+v", st)
	}
	if n := len(env.Model.Requests()); n != calls+1 {
		t.Fatalf("other channel: model called %d times, want 1", n-calls)
	}
	// A server without usage: estimated from the characters.
	ask("estimate", "estimate me")
	used, err := env.Store.TokensUsed(ctx, "console:estimate", time.Now())
	if err != nil || used < int64(planner.EstimateTokens(plan)) || used == 600 {
		t.Fatalf("estimated use = %d, %v; want at least %d from the answer alone", used, err, planner.EstimateTokens(plan))
	}
}
