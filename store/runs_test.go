package store_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// allModel has the model work every card, with review.
var allModel = plan.Runners{Others: plan.Runner{Name: "model"}}

// workOne claims the next card for the model and keeps output as its
// output, as a runner does: the card goes to Review (or Done).
func workOne(t *testing.T, s *store.Store, actor, output string) board.RunJob {
	t.Helper()
	ctx := context.Background()
	job, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := s.CompleteRunCard(ctx, job, actor, output); err != nil {
		t.Fatal(err)
	}
	return job
}

// inReview starts a run, every card the model's, of a newspaper board
// made in channel, and works its first card into Review with output.
func inReview(t *testing.T, s *store.Store, channel, output string) (board.Run, board.RunJob) {
	t.Helper()
	id, _ := newspaperBoard(t, s, channel)
	run, err := s.StartRun(context.Background(), board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: allModel, Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return run, workOne(t, s, "Planner", output)
}

// TestRunWorksTheBoardInDependencyOrder: a run resets the cards, hands
// them to the runner in dependency order with the outputs of what they
// wait on, takes reviews, and ends done when every card is Done.
func TestRunWorksTheBoardInDependencyOrder(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, cards := newspaperBoard(t, s, "console:runs")
	// A card left Done from before: the run starts it again.
	done := "Done"
	if _, err := s.ChangeCard(ctx, board.CardChange{Card: cards["topic_policy"].ID, Actor: "alice", Status: &done}); err != nil {
		t.Fatal(err)
	}
	run, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: allModel, Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if run.Number != 1 || run.State != board.RunRunning || len(run.Cards) != 10 {
		t.Fatalf("run = %+v", run)
	}
	// The start's read-back (from its inserts) is the run as read later.
	if again, err := s.Run(ctx, run.ID); err != nil {
		t.Fatal(err)
	} else if !reflect.DeepEqual(again, run) {
		t.Fatalf("the started run\n%+v\nreads back as\n%+v", run, again)
	}
	for _, c := range run.Cards {
		want := "Backlog"
		if len(c.DependsOn) == 0 {
			want = "Ready"
		}
		if c.Status != want {
			t.Errorf("%s starts %s, want %s", c.Handle, c.Status, want)
		}
	}
	if _, err := s.StartRun(ctx, board.RunStart{Board: id, User: "bob", Trigger: "manual", Deadline: time.Hour}); !errors.Is(err, board.ErrRunGoing) {
		t.Fatalf("second run: %v, want ErrRunGoing", err)
	}

	// Work every card: each taken once, after what it waits on is Done,
	// with their outputs.
	worked := map[board.CardID]int{}
	for round := 0; round < 20; round++ {
		var jobs []board.RunJob
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				job, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					jobs = append(jobs, job)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(jobs) == 0 {
			break
		}
		for _, job := range jobs {
			worked[job.Card.ID]++
			if job.Card.Status != "In Progress" {
				t.Errorf("%s taken in %s", job.Card.Handle, job.Card.Status)
			}
			for _, in := range job.Inputs {
				if in.Status != "Done" || !strings.HasPrefix(in.Output, "output of "+in.Handle) {
					t.Errorf("%s got input %s in %s with %q", job.Card.Handle, in.Handle, in.Status, in.Output)
				}
			}
			up, err := s.CompleteRunCard(ctx, job, "Researcher", "output of "+job.Card.Handle)
			if err != nil || up.Card.Status != "Review" {
				t.Fatalf("complete %s: %+v %v", job.Card.Handle, up.Card.Status, err)
			}
			if _, err := s.ReviewRunCard(ctx, run.ID, job.Card.ID, board.AnyRound, "alice", true, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(worked) != 10 {
		t.Fatalf("worked %d cards, want 10", len(worked))
	}
	for c, n := range worked {
		if n != 1 {
			t.Errorf("%s worked %d times", c, n)
		}
	}
	ended, err := s.SweepRuns(ctx)
	if err != nil || len(ended) != 1 || ended[0].State != board.RunDone {
		t.Fatalf("sweep = %+v, %v", ended, err)
	}
	if again, _ := s.SweepRuns(ctx); len(again) != 0 {
		t.Fatalf("ended twice: %+v", again)
	}
	next, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "schedule", Runners: allModel, Deadline: time.Hour})
	if err != nil || next.Number != 2 {
		t.Fatalf("run 2: %+v %v", next, err)
	}
}

// TestRunSendBackAndFailures: a card sent back is worked again with the
// reason, at most three times; a runner that lost its lease cannot write;
// a card failing three times stops the run.
func TestRunSendBackAndFailures(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	run, job := inReview(t, s, "console:sendback", "draft")
	for i := 1; i <= 3; i++ {
		if _, err := s.ReviewRunCard(ctx, run.ID, job.Card.ID, board.AnyRound, "alice", false, "cite sources"); err != nil {
			t.Fatalf("send back %d: %v", i, err)
		}
		again, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
		if err != nil || !ok || again.Card.ID != job.Card.ID || again.Feedback != "cite sources" {
			t.Fatalf("after send back %d: %+v %v %v", i, again.Card.Handle, again.Feedback, err)
		}
		if _, err := s.CompleteRunCard(ctx, again, "Planner", "better"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ReviewRunCard(ctx, run.ID, job.Card.ID, board.AnyRound, "alice", false, "again"); !errors.Is(err, board.ErrNotRunnable) {
		t.Fatalf("fourth send back: %v", err)
	}
	if _, err := s.ReviewRunCard(ctx, run.ID, job.Card.ID, board.AnyRound, "alice", true, ""); err != nil {
		t.Fatal(err)
	}

	// A lease that ends: another runner takes the card, and the first
	// cannot write over it.
	slow, ok, err := s.ClaimRunCard(ctx, "model", 10*time.Millisecond)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	time.Sleep(50 * time.Millisecond)
	fresh, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok || fresh.Card.ID != slow.Card.ID || fresh.Attempt != 2 {
		t.Fatalf("after the lease: %+v %v %v", fresh.Card.Handle, fresh.Attempt, err)
	}
	if _, err := s.CompleteRunCard(ctx, slow, "Researcher", "late"); !errors.Is(err, board.ErrNotRunnable) {
		t.Fatalf("late writer: %v", err)
	}
	if err := s.FailRunCard(ctx, fresh, "the model server is unreachable"); err != nil {
		t.Fatal(err)
	}
	third, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok || third.Card.ID != slow.Card.ID || third.Attempt != 3 {
		t.Fatalf("third attempt: %+v %v", third.Attempt, err)
	}
	if err := s.FailRunCard(ctx, third, "the model server is unreachable"); err != nil {
		t.Fatal(err)
	}
	ended, err := s.SweepRuns(ctx)
	if err != nil || len(ended) != 1 || ended[0].State != board.RunStopped || !strings.Contains(ended[0].Reason, "failed after 3 attempts: the model server is unreachable") {
		t.Fatalf("sweep = %+v, %v", ended, err)
	}
	if _, _, err := s.ClaimRunCard(ctx, "model", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StopRun(ctx, run.ID, "alice"); !errors.Is(err, board.ErrNotRunnable) {
		t.Fatalf("stop an ended run: %v", err)
	}
}

// TestApprovedPlanSchedulesItsBoard: a plan's schedule_board is written
// with the approval, for the board the plan creates (one trip) or, in a
// plan creating none, for the channel's board; its owner is the requester.
func TestApprovedPlanSchedulesItsBoard(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	env := newspaper(t)
	env.Actions = append(env.Actions, plan.Action{Type: plan.ActionScheduleBoard, Cron: "0 6 * * *", Timezone: "Europe/Berlin"})
	res, err := s.Execute(ctx, board.Execution{ProposalID: "p_sched1", Channel: "console:sched", RequestedBy: "alice", ApprovedBy: "bob", Plan: env})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := s.ScheduleOf(ctx, res.BoardID)
	if err != nil || sc.Cron != "0 6 * * *" || sc.Timezone != "Europe/Berlin" || sc.SetBy != "alice" || time.Since(sc.LastSlot) > time.Minute {
		t.Fatalf("schedule = %+v, %v", sc, err)
	}
	// A later plan changes only the schedule of the channel's board.
	only := plan.Envelope{Kind: plan.KindProposeActions, Actions: []plan.Action{{Type: plan.ActionScheduleBoard, Cron: "30 7 * * 1-5", Timezone: "UTC"}}}
	again, err := s.Execute(ctx, board.Execution{ProposalID: "p_sched2", Channel: "console:sched", RequestedBy: "carol", ApprovedBy: "bob", Plan: only})
	if err != nil || again.BoardID != res.BoardID {
		t.Fatalf("schedule only: %+v, %v", again, err)
	}
	if sc, err := s.ScheduleOf(ctx, res.BoardID); err != nil || sc.Cron != "30 7 * * 1-5" || sc.SetBy != "carol" {
		t.Fatalf("rescheduled = %+v, %v", sc, err)
	}
	if _, err := s.Execute(ctx, board.Execution{ProposalID: "p_sched3", Channel: "console:nowhere", RequestedBy: "carol", Plan: only}); !errors.Is(err, board.ErrNoTargetBoard) {
		t.Fatalf("no board to schedule: %v", err)
	}
}

// TestARunOverBudgetSetsItsCardsAside: a card given back because its
// channel's model budget is spent is not counted, and it and the run's
// other cards no runner holds (one whose runner's lease ran out
// included) wait, held by nobody: no runner takes them, the runner that
// lost its lease cannot write, the sweep leaves the run be, and another
// run's cards are taken meanwhile.
func TestARunOverBudgetSetsItsCardsAside(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s, "console:spent")
	run, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: allModel, Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	first, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := s.CompleteRunCard(ctx, first, "Planner", "the policy"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReviewRunCard(ctx, run.ID, first.Card.ID, board.AnyRound, "bob", true, ""); err != nil {
		t.Fatal(err)
	}
	// The researchers may go: one runner takes one and dies, another
	// takes the next and finds the budget spent.
	// The lost lease is long enough that the next claim, on a busy
	// machine, is made before it runs out (20 ms was not).
	lost, ok, err := s.ClaimRunCard(ctx, "model", time.Second)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	spent, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok || spent.Card.ID == lost.Card.ID {
		t.Fatal(ok, err)
	}
	time.Sleep(1100 * time.Millisecond)
	if err := s.ReleaseRunCard(ctx, spent, time.Hour); err != nil {
		t.Fatal(err)
	}
	if job, ok, err := s.ClaimRunCard(ctx, "model", time.Minute); err != nil || ok {
		t.Fatalf("a card of the waiting run was taken: %s %v", job.Card.Handle, err)
	}
	if _, err := s.CompleteRunCard(ctx, lost, "Researcher", "late"); !errors.Is(err, board.ErrNotRunnable) {
		t.Fatalf("the runner that lost its lease wrote: %v", err)
	}
	cur, err := s.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cur.Cards {
		switch c.Card {
		case spent.Card.ID:
			if c.Attempts != 0 {
				t.Errorf("the card given back counts %d attempts", c.Attempts)
			}
		case lost.Card.ID:
			if c.Attempts != 1 {
				t.Errorf("the card whose lease ran out counts %d attempts", c.Attempts)
			}
		}
	}
	if ended, err := s.SweepRuns(ctx); err != nil || len(ended) != 0 {
		t.Fatalf("the sweep ended the waiting run: %+v %v", ended, err)
	}
	// Another channel's run is not held up.
	other, _ := newspaperBoard(t, s, "console:within")
	next, err := s.StartRun(ctx, board.RunStart{Board: other, User: "carol", Trigger: "manual", Runners: allModel, Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if job, ok, err := s.ClaimRunCard(ctx, "model", time.Minute); err != nil || !ok || job.Run.ID != next.ID {
		t.Fatalf("the other run's card: %v %v %s", ok, err, job.Run.ID)
	}
}
