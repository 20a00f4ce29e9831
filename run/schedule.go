package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
)

// due says which slots of a schedule have come since last, up to now: the
// latest of them and how many there were (at most maxMissed are counted;
// a schedule that runs at most hourly has fewer in a year).
func due(c plan.Cron, last, now time.Time) (latest time.Time, n int) {
	const maxMissed = 10000
	for t := c.Next(last); !t.IsZero() && !t.After(now) && n < maxMissed; t = c.Next(t) {
		latest, n = t, n+1
	}
	return latest, n
}

// lateAfter is how late a slot may fire and still count as on time; later
// than that, BobNet was down at the slot and the run is a catch-up.
const lateAfter = 5 * time.Minute

// ScheduleStore is what the scheduler needs of storage; *store.Store is
// one.
type ScheduleStore interface {
	Schedules(ctx context.Context) ([]board.Schedule, error)
	// FireSchedule moves the schedule's last slot from from to to and
	// starts st's run, in one transaction; won is false when another
	// replica moved it first, ErrRunGoing when the slot was spent without
	// a run because the previous one is still going.
	FireSchedule(ctx context.Context, id board.ID, from, to time.Time, st board.RunStart) (r board.Run, won bool, err error)
}

// ScheduleTeller tells a board's thread what its schedule did.
type ScheduleTeller interface {
	Started(ctx context.Context, r board.Run)
	Skipped(ctx context.Context, id board.ID, slot time.Time, why string)
}

// Scheduler starts the runs schedules ask for. Every replica may run one:
// a slot fires once, on the replica that moves the schedule past it, in
// the transaction that starts its run.
type Scheduler struct {
	store    ScheduleStore
	tell     ScheduleTeller
	runners  plan.Runners
	deadline time.Duration
	logger   *slog.Logger
}

// NewScheduler makes a scheduler; runners says who works each assignee's
// cards (Worker.Runner) and deadline how long a run may take.
func NewScheduler(store ScheduleStore, tell ScheduleTeller, runners plan.Runners, deadline time.Duration, logger *slog.Logger) *Scheduler {
	return &Scheduler{store: store, tell: tell, runners: runners, deadline: deadline, logger: logger}
}

// Run ticks every interval until ctx ends, with the clock now.
func (s *Scheduler) Run(ctx context.Context, interval time.Duration, now func() time.Time) {
	for ctx.Err() == nil {
		if err := s.Tick(ctx, now()); err != nil && ctx.Err() == nil {
			s.logger.Warn("schedules", "err", err)
		}
		sleep(ctx, interval)
	}
}

// Tick fires what is due at now. Slots missed while BobNet was down make
// one catch-up run, said so in the thread; a slot that comes while the
// board's run is still going is skipped, said so too.
func (s *Scheduler) Tick(ctx context.Context, now time.Time) error {
	scs, err := s.store.Schedules(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, sc := range scs {
		c, err := board.ParseSchedule(sc.Cron, sc.Timezone)
		if err != nil {
			errs = append(errs, fmt.Errorf("board %s: %w", sc.Board, err))
			continue
		}
		slot, n := due(c, sc.LastSlot, now)
		if n == 0 {
			continue
		}
		trigger := "schedule"
		if n > 1 || now.Sub(slot) > lateAfter {
			trigger = "catch_up"
		}
		st := board.RunStart{Board: sc.Board, User: sc.SetBy, Trigger: trigger, Runners: s.runners, Deadline: s.deadline}
		r, won, err := s.store.FireSchedule(ctx, sc.Board, sc.LastSlot, slot, st)
		switch {
		case errors.Is(err, board.ErrRunGoing):
			s.tell.Skipped(ctx, sc.Board, slot.In(c.Zone), "the previous run is still going")
		case err != nil:
			errs = append(errs, fmt.Errorf("start the scheduled run of %s: %w", sc.Board, err))
		case !won:
			// another replica fired it
		default:
			s.logger.Info("scheduled run started", "board", sc.Board, "run", r.Number, "slot", slot, "missed", n-1)
			s.tell.Started(ctx, r)
		}
	}
	return errors.Join(errs...)
}
