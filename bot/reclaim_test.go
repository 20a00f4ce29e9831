package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// numberedPlans makes env's model answer every call with the newspaper
// plan, numbered by call and slowed by delay, so two calls for one request
// give two different plans.
func numberedPlans(t *testing.T, env *bottest.Env, delay time.Duration) {
	t.Helper()
	plan := plannertest.NewspaperPlan(t)
	var calls atomic.Int64
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply {
		n := calls.Add(1)
		return plannertest.Reply{Content: strings.Replace(plan, `"answer": "`, fmt.Sprintf(`"answer": "Plan %d. `, n), 1), Delay: delay}
	})
}

// A worker dies holding several requests. The replica that reclaims them
// must not leave all but the first unleased while its model (slower than
// the reclaim time) works on the first: every request is planned once,
// with one proposal whose plan is the one previewed.
func TestReclaimedRequestsArePlannedOnce(t *testing.T) {
	t.Parallel()
	dead := bottest.New(t)
	dead.Stop()
	if err := redisstore.NewQueue(dead.Redis, dead.Prefix).Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	const n = 3
	var ids []board.RequestID
	for i := range n {
		th := board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: fmt.Sprintf("reclaim-%d", i)}, ID: "t1"}
		id, err := dead.Engine.Submit(context.Background(), board.Request{Thread: th, User: "alice", Text: newspaperRequest})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// The dead worker read them all and never acknowledged them.
	readCtx, stopReaders := context.WithCancel(context.Background())
	for range n {
		got, err := dead.Queue.Read(readCtx, "dead-worker", 5*time.Second)
		if err != nil || len(got) != 1 {
			t.Fatalf("dead worker's read = %v, %v", got, err)
		}
	}
	stopReaders()

	one := bottest.WithConfig(func(c *bot.Config) { c.Workers = 1 })
	first := bottest.New(t, bottest.ReplicaOf(dead), one)
	second := bottest.New(t, bottest.ReplicaOf(dead), one)
	// Twice the reclaim time (1 s) per call.
	numberedPlans(t, first, 2*time.Second)
	for _, id := range ids {
		if st := first.WaitRequest(t, id); st.State != board.RequestDone || st.ProposalID == "" {
			t.Fatalf("status of %s = %+v", id, st)
		}
	}
	first.WaitIdle(t)

	if c := len(first.Model.Requests()); c != n {
		t.Errorf("model calls = %d, want %d (one per request)", c, n)
	}
	if c := count(t, first, "proposals"); c != n {
		t.Errorf("proposals = %d, want %d", c, n)
	}
	_, p1, _ := first.Poster.Snapshot()
	_, p2, _ := second.Poster.Snapshot()
	previews := append(p1, p2...)
	if len(previews) != n {
		t.Errorf("previews = %d, want %d", len(previews), n)
	}
	for _, pv := range previews {
		assertPlanIsPreviewed(t, first, pv)
	}
}

// assertPlanIsPreviewed checks that the plan Postgres keeps for a preview's
// proposal, and the one an approval would execute, are the plan previewed.
func assertPlanIsPreviewed(t *testing.T, env *bottest.Env, pv board.Proposal) {
	t.Helper()
	want, _ := json.Marshal(pv.Plan)
	rec, err := env.Store.Proposal(context.Background(), pv.ID)
	if err != nil {
		t.Fatal(err)
	}
	var stored plan.Envelope
	if err := json.Unmarshal(rec.Plan, &stored); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(stored); string(got) != string(want) {
		t.Errorf("proposal %s: Postgres keeps %q, the preview showed %q", pv.ID, stored.Answer, pv.Plan.Answer)
	}
	now, err := env.Engine.Proposal(context.Background(), pv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(now.Plan); string(got) != string(want) {
		t.Errorf("proposal %s: an approval would execute %q, the preview showed %q", pv.ID, now.Plan.Answer, pv.Plan.Answer)
	}
}

// A request planned again after Redis lost its proposal (and its planned
// answer) gets a second, different plan from the model; the plan saved
// first, the one previewed, is the one kept and the one an approval
// executes.
func TestReplannedRequestKeepsThePlanSavedFirst(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	numberedPlans(t, env, 0)
	ctx := context.Background()
	id, err := env.Engine.Submit(ctx, board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitRequest(t, id)
	env.WaitIdle(t)
	_, previews, _ := env.Poster.Snapshot()
	if len(previews) != 1 || previews[0].ID != st.ProposalID {
		t.Fatalf("previews = %+v", previews)
	}

	// Redis loses the proposal and the answer; the request is queued again.
	ps := redisstore.NewInFlight(env.Redis, env.Prefix)
	rec, err := ps.Request(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rec.Answer, rec.Status = nil, board.RequestStatus{ID: id, State: board.RequestPlanning}
	// Written under the store (which never moves an answered record
	// back): this is Redis losing what it had, not a worker's write.
	raw, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Redis.Set(ctx, env.Prefix+":request:"+string(id), raw, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := env.Redis.Del(ctx, env.Prefix+":proposal:{"+string(st.ProposalID)+"}").Err(); err != nil {
		t.Fatal(err)
	}
	// Queued again on the one stream of BobNet before shards, as a
	// replica of an older version would: an upgraded engine drains it.
	if err := env.Redis.XAdd(ctx, &redis.XAddArgs{Stream: env.Prefix + ":requests", Values: []string{"request", string(id)}}).Err(); err != nil {
		t.Fatal(err)
	}
	if st := env.WaitRequest(t, id); st.State != board.RequestDone {
		t.Fatalf("status after the replan = %+v", st)
	}
	env.WaitIdle(t)
	if n := len(env.Model.Requests()); n != 2 {
		t.Fatalf("model calls = %d, want 2 (the replan asks again)", n)
	}
	assertPlanIsPreviewed(t, env, previews[0])
	if _, err := env.Engine.Approve(ctx, st.ProposalID, "alice"); err != nil {
		t.Fatal(err)
	}
	rec2, err := env.Store.Proposal(ctx, st.ProposalID)
	if err != nil || rec2.State != "approved" {
		t.Fatalf("after approval: %+v, %v", rec2, err)
	}
}
