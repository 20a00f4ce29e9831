package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestFireScheduleIsOneTransaction: the slot's advance and the run's start
// commit together. A start that fails after the advance leaves the slot
// due and no run; replicas firing the same slot at once start one run; a
// slot while the run is going is spent, audited, and starts nothing.
func TestFireScheduleIsOneTransaction(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s, "console:fire")
	set := time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC)
	slot := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	if err := s.SetSchedule(ctx, board.Schedule{Board: id, Cron: "0 5 * * *", Timezone: "UTC", SetBy: "alice", LastSlot: set}); err != nil {
		t.Fatal(err)
	}
	lastSlot := func() time.Time {
		t.Helper()
		sc, err := s.ScheduleOf(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return sc.LastSlot
	}
	runCount := func() int {
		t.Helper()
		runs, err := s.Runs(ctx, id, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(runs)
	}

	// The start fails after the advance (the database refuses its
	// trigger): nothing stays.
	bad := board.RunStart{Board: id, User: "alice", Trigger: "no such trigger", Deadline: time.Hour}
	if _, won, err := s.FireSchedule(ctx, id, set, slot, bad); err == nil || won {
		t.Fatalf("failing start: won %v, err %v", won, err)
	}
	if got := lastSlot(); !got.Equal(set) || runCount() != 0 {
		t.Fatalf("after a failed start: last slot %v, %d runs; want %v and none", got, runCount(), set)
	}

	// Eight replicas fire the slot at once: one run.
	st := board.RunStart{Board: id, User: "alice", Trigger: "schedule", Deadline: time.Hour}
	var mu sync.Mutex
	var wins []board.Run
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			r, won, err := s.FireSchedule(ctx, id, set, slot, st)
			if err != nil {
				t.Error(err)
				return
			}
			if won {
				mu.Lock()
				wins = append(wins, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(wins) != 1 || wins[0].Number != 1 || wins[0].Trigger != "schedule" || len(wins[0].Cards) == 0 {
		t.Fatalf("fired %+v; want one run with its cards", wins)
	}
	if got := lastSlot(); !got.Equal(slot) || runCount() != 1 {
		t.Fatalf("last slot %v, %d runs", got, runCount())
	}

	// The next slot while run 1 is going: spent, said so, no run.
	next := slot.AddDate(0, 0, 1)
	if _, won, err := s.FireSchedule(ctx, id, slot, next, st); !won || !errors.Is(err, board.ErrRunGoing) {
		t.Fatalf("slot while running: won %v, err %v; want won and ErrRunGoing", won, err)
	}
	if got := lastSlot(); !got.Equal(next) || runCount() != 1 {
		t.Fatalf("skipped slot: last slot %v, %d runs", got, runCount())
	}
	events, err := s.Audit(ctx, board.AuditFilter{BoardID: id})
	if err != nil {
		t.Fatal(err)
	}
	skips := 0
	for _, e := range events {
		if e.Action == "schedule_skipped" {
			skips++
		}
	}
	if skips != 1 {
		t.Fatalf("%d schedule_skipped events, want 1", skips)
	}
	// A stale from (the slot already moved) does nothing.
	if _, won, err := s.FireSchedule(ctx, id, slot, next, st); won || err != nil {
		t.Fatalf("stale fire: won %v, err %v", won, err)
	}
}
