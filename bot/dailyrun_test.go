package bot_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/run"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestTheDailyNewspaper: "every day at 06:00" becomes one proposal holding
// the board and its schedule; approved, the schedule fires at 06:00 Berlin
// time on an injected clock, the researchers are worked in parallel, the
// editor gets their outputs, reviews are accepted, and the run ends done
// with its news told in the board's thread.
func TestTheDailyNewspaper(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	var plan map[string]any
	if err := json.Unmarshal([]byte(plannertest.NewspaperPlan(t)), &plan); err != nil {
		t.Fatal(err)
	}
	plan["actions"] = append(plan["actions"].([]any), map[string]any{"type": "schedule_board", "cron": "0 6 * * *", "timezone": "Europe/Berlin"})
	daily, _ := json.Marshal(plan)
	env.Model.Handle(func(req openai.ChatCompletionRequest) plannertest.Reply {
		if user := plannertest.LastUserMessage(req); strings.HasPrefix(user, "Card NEWS-") {
			handle := strings.TrimSuffix(strings.Fields(user)[1], ".")
			return plannertest.Reply{Content: "## " + handle + "\n\nFindings of " + handle + ".", Tokens: 50}
		}
		return plannertest.Reply{Content: string(daily)}
	})
	id, err := env.Engine.Submit(ctx, board.Request{Thread: general, User: "alice", Text: "plan our daily research newspaper, every day at 06:00 Berlin time"})
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitRequest(t, id)
	p, err := env.Engine.Proposal(ctx, st.ProposalID)
	if err != nil || p.Plan.Schedule() == nil || !strings.Contains(bot.PlannedScheduleText(p.Plan), "0 6 * * * (Europe/Berlin)") {
		t.Fatalf("proposal: %+v %v", p.Plan.Schedule(), err)
	}
	ap, err := env.Engine.Approve(ctx, p.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := env.Store.ScheduleOf(ctx, ap.BoardID)
	if err != nil || sc.SetBy != "alice" {
		t.Fatalf("schedule: %+v %v", sc, err)
	}

	// 06:00 tomorrow in Berlin, on the test's clock.
	berlin, _ := time.LoadLocation("Europe/Berlin")
	next, _ := sc.Next(time.Now())
	worker := run.NewWorker(env.Store, planner.NewClient(planner.ClientConfig{BaseURL: env.Model.URL(), Model: "test-model", Timeout: 10 * time.Second}, storetest.Logger(t)),
		env.Engine, env.Engine, nopObserver{}, planner.DefaultProfiles(), run.Config{Workers: 3, Lease: time.Minute, Poll: 10 * time.Millisecond}, storetest.Logger(t))
	sched := run.NewScheduler(env.Store, env.Engine, worker.Runners(), time.Hour, storetest.Logger(t))
	if err := sched.Tick(ctx, next.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if runs, _ := env.Store.Runs(ctx, ap.BoardID, 5); len(runs) != 0 {
		t.Fatalf("ran before 06:00: %+v", runs)
	}
	if err := sched.Tick(ctx, next.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	runs, _ := env.Store.Runs(ctx, ap.BoardID, 5)
	if len(runs) != 1 || runs[0].Trigger != "schedule" || next.In(berlin).Hour() != 6 {
		t.Fatalf("runs at 06:00: %+v", runs)
	}
	r := runs[0]

	// Work it: three researchers in parallel, then the editor.
	workCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = worker.Run(workCtx) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		cur, err := env.Store.Run(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.State != board.RunRunning || time.Now().After(deadline) {
			r = cur
			break
		}
		done := map[board.CardID]bool{}
		for _, c := range cur.Cards {
			done[c.Card] = c.Status == "Done"
		}
		for _, c := range cur.Cards {
			switch {
			case c.Status == "Review":
				if _, err := env.Engine.ReviewRunCard(ctx, r.ID, c.Card, board.AnyRound, "alice", true, ""); err != nil {
					t.Fatal(err)
				}
			case c.Runner == "" && c.Status != "Done":
				ready := true
				for _, d := range c.DependsOn {
					ready = ready && done[d]
				}
				if ready {
					doneStatus := "Done"
					if _, err := env.Store.ChangeCard(ctx, board.CardChange{Card: c.Card, Actor: "carol", Status: &doneStatus}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r.State != board.RunDone {
		t.Fatalf("run ended %s: %s", r.State, r.Reason)
	}
	env.Poster.WaitFor(t, "the run's news in the thread", func(replies []bottest.PostedReply, _, _ []board.Proposal) bool {
		started, reviewing := false, false
		for _, rp := range replies {
			started = started || strings.Contains(rp.Reply.Text, "Run 1 started on its schedule")
			reviewing = reviewing || strings.Contains(rp.Reply.Text, "is ready for review in run 1")
		}
		return started && reviewing
	})
}

// nopObserver observes nothing.
type nopObserver struct{}

func (nopObserver) RunEnded(string)          {}
func (nopObserver) CardWorked(time.Duration) {}
