package run_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/run"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// scheduleTeller keeps what the scheduler told.
type scheduleTeller struct {
	mu      sync.Mutex
	started []board.Run
	skipped []string
}

func (s *scheduleTeller) Started(_ context.Context, r board.Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = append(s.started, r)
}

func (s *scheduleTeller) Skipped(_ context.Context, _ board.ID, slot time.Time, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skipped = append(s.skipped, slot.Format("2006-01-02 15:04 MST")+": "+why)
}

func TestParseSchedule(t *testing.T) {
	t.Parallel()
	for _, ok := range [][2]string{{"0 6 * * *", "Europe/Berlin"}, {"30 7 * * 1-5", "UTC"}, {"@daily", "America/New_York"}} {
		if _, err := board.ParseSchedule(ok[0], ok[1]); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for _, bad := range [][2]string{{"0 6 * *", "UTC"}, {"0 25 * * *", "UTC"}, {"0 6 * * *", "Mars/Olympus"}, {"0 6 * * *", ""}, {"CRON_TZ=UTC 0 6 * * *", "UTC"}, {"* * * * * *", "UTC"}, {"0 6 30 2 *", "UTC"}, {"@every 1s", "UTC"}} {
		if _, err := board.ParseSchedule(bad[0], bad[1]); !errors.Is(err, board.ErrBadSchedule) {
			t.Errorf("%v: %v, want ErrBadSchedule", bad, err)
		}
	}
	if c, err := board.DailyCron("06:00"); err != nil || c != "0 6 * * *" {
		t.Errorf("daily 06:00 = %q, %v", c, err)
	}
	if _, err := board.DailyCron("6 am"); err == nil {
		t.Error("6 am accepted")
	}
}

// TestStoredScheduleTheRuleRefusesNeverFires: a schedule stored before
// the rule (30 February) is reported at each tick and starts nothing; it
// used to count 9,999 missed slots and start a catch-up run.
func TestStoredScheduleTheRuleRefusesNeverFires(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s)
	set := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	if err := s.SetSchedule(ctx, board.Schedule{Board: id, Cron: "0 6 30 2 *", Timezone: "UTC", SetBy: "alice", LastSlot: set}); err != nil {
		t.Fatal(err)
	}
	tell := &scheduleTeller{}
	sched := run.NewScheduler(s, tell, plan.Runners{}, time.Hour, storetest.Logger(t))
	for _, now := range []time.Time{set.Add(time.Minute), set.AddDate(1, 0, 0)} {
		if err := sched.Tick(ctx, now); err == nil || !strings.Contains(err.Error(), "has no slot within a year") {
			t.Fatalf("tick at %v: %v, want the rule's refusal", now, err)
		}
	}
	if runs, err := s.Runs(ctx, id, 10); err != nil || len(runs) != 0 || len(tell.started) != 0 {
		t.Fatalf("runs %+v, %v; told %+v", runs, err, tell.started)
	}
}

// TestScheduleFiresOnceAndCatchesUp: 06:00 in Berlin fires one run however
// many replicas tick; a slot while a run is going is skipped and said so;
// BobNet down across two slots makes one catch-up run. The clock is the
// test's: no sleeps.
func TestScheduleFiresOnceAndCatchesUp(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s)
	berlin, _ := time.LoadLocation("Europe/Berlin")
	set := time.Date(2026, 11, 24, 5, 0, 0, 0, berlin)
	if err := s.SetSchedule(ctx, board.Schedule{Board: id, Cron: "0 6 * * *", Timezone: "Europe/Berlin", SetBy: "alice", LastSlot: set}); err != nil {
		t.Fatal(err)
	}
	tell := &scheduleTeller{}
	var runner plan.Runners // people work every card
	replicas := []*run.Scheduler{
		run.NewScheduler(s, tell, runner, time.Hour, storetest.Logger(t)),
		run.NewScheduler(s, tell, runner, time.Hour, storetest.Logger(t)),
		run.NewScheduler(s, tell, runner, time.Hour, storetest.Logger(t)),
	}
	tickAll := func(now time.Time) {
		t.Helper()
		var wg sync.WaitGroup
		for _, sc := range replicas {
			wg.Go(func() {
				if err := sc.Tick(ctx, now); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	tickAll(time.Date(2026, 11, 24, 5, 59, 30, 0, berlin))
	if len(tell.started) != 0 {
		t.Fatalf("fired early: %+v", tell.started)
	}
	tickAll(time.Date(2026, 11, 24, 6, 0, 10, 0, berlin))
	tickAll(time.Date(2026, 11, 24, 6, 0, 40, 0, berlin))
	if len(tell.started) != 1 || tell.started[0].Trigger != "schedule" || tell.started[0].Number != 1 || tell.started[0].StartedBy != "alice" {
		t.Fatalf("started = %+v", tell.started)
	}

	// The next morning the run is still going: skipped, and said so.
	tickAll(time.Date(2026, 11, 25, 6, 0, 5, 0, berlin))
	if len(tell.started) != 1 || len(tell.skipped) != 1 {
		t.Fatalf("started %d, skipped %v", len(tell.started), tell.skipped)
	}
	if _, err := s.StopRun(ctx, tell.started[0].ID, "alice"); err != nil {
		t.Fatal(err)
	}

	// Down on the 26th and the 27th, up at 09:00 on the 27th: one run.
	tickAll(time.Date(2026, 11, 27, 9, 0, 0, 0, berlin))
	if len(tell.started) != 2 || tell.started[1].Trigger != "catch_up" || tell.started[1].Number != 2 {
		t.Fatalf("catch-up: %+v", tell.started)
	}
	sc, err := s.ScheduleOf(ctx, id)
	if err != nil || !sc.LastSlot.Equal(time.Date(2026, 11, 27, 6, 0, 0, 0, berlin)) {
		t.Fatalf("last slot %v, %v", sc.LastSlot, err)
	}
	runs, _ := s.Runs(ctx, id, 10)
	if len(runs) != 2 {
		t.Fatalf("runs = %d", len(runs))
	}
	if next, err := sc.Next(time.Date(2026, 11, 27, 9, 0, 0, 0, berlin)); err != nil || !next.Equal(time.Date(2026, 11, 28, 6, 0, 0, 0, berlin)) {
		t.Fatalf("next = %v, %v", next, err)
	}
	if err := s.DeleteSchedule(ctx, id, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSchedule(ctx, id, "alice"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}

// failingFire is the store with the run's start failing after the slot's
// advance, in the same transaction (the database refuses the trigger),
// while fail is set: a crash or a database error at that point.
type failingFire struct {
	*store.Store
	fail atomic.Bool
}

func (f *failingFire) FireSchedule(ctx context.Context, id board.ID, from, to time.Time, st board.RunStart) (board.Run, bool, error) {
	if f.fail.Load() {
		st.Trigger = "injected failure"
	}
	return f.Store.FireSchedule(ctx, id, from, to, st)
}

// TestScheduleSlotSurvivesAFailedStart: a start that fails after the
// slot's advance loses nothing: the tick reports it, nothing is told, and
// the next tick fires the same slot, once.
func TestScheduleSlotSurvivesAFailedStart(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s)
	set := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	if err := s.SetSchedule(ctx, board.Schedule{Board: id, Cron: "0 6 * * *", Timezone: "UTC", SetBy: "alice", LastSlot: set}); err != nil {
		t.Fatal(err)
	}
	flaky := &failingFire{Store: s}
	flaky.fail.Store(true)
	tell := &scheduleTeller{}
	sched := run.NewScheduler(flaky, tell, plan.Runners{}, time.Hour, storetest.Logger(t))
	if err := sched.Tick(ctx, time.Date(2026, 11, 24, 6, 0, 5, 0, time.UTC)); err == nil {
		t.Fatal("a failed start was not reported")
	}
	if sc, err := s.ScheduleOf(ctx, id); err != nil || !sc.LastSlot.Equal(set) || len(tell.started)+len(tell.skipped) != 0 {
		t.Fatalf("after the failure: last slot %v (%v), told %+v %v", sc.LastSlot, err, tell.started, tell.skipped)
	}
	flaky.fail.Store(false)
	for range 2 {
		if err := sched.Tick(ctx, time.Date(2026, 11, 24, 6, 0, 35, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
	}
	if len(tell.started) != 1 || tell.started[0].Trigger != "schedule" {
		t.Fatalf("started %+v", tell.started)
	}
	if runs, err := s.Runs(ctx, id, 10); err != nil || len(runs) != 1 {
		t.Fatalf("runs %d, %v", len(runs), err)
	}
}
