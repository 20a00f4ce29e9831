package bot_test

import (
	"context"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// Plans whose models answered together are stored a few at a time: with
// every slot taken, an answered plan waits (its model was asked and
// answered, nothing is stored), and is stored and previewed as soon as a
// slot is free.
func TestAnsweredPlansWaitForAStoringSlot(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	plan := plannertest.NewspaperPlan(t)
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: plan} })
	release := env.Engine.HoldStoring(bot.StoringAtOnce())
	id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(env.Model.Requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(env.Model.Requests()) == 0 {
		t.Fatal("the model was never asked")
	}
	time.Sleep(300 * time.Millisecond)
	if n := count(t, env, "proposals"); n != 0 {
		t.Fatalf("%d proposals stored while every storing slot was taken", n)
	}
	if st, err := env.Engine.Request(context.Background(), id); err != nil || st.State != board.RequestPlanning {
		t.Fatalf("request while waiting for a slot: %+v, %v; want planning", st, err)
	}
	release()
	if st := env.WaitRequest(t, id); st.State != board.RequestDone || st.ProposalID == "" {
		t.Fatalf("status once a slot is free = %+v", st)
	}
	if n := count(t, env, "proposals"); n != 1 {
		t.Fatalf("proposals = %d, want 1", n)
	}
}
