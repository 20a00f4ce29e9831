package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
)

// ScheduleCommand is `schedule KEY …` from chat, read.
type ScheduleCommand struct {
	Ref            string // the board key; "" for the channel's board
	Cron, Timezone string
	Off            bool // remove the schedule
	Show           bool // say what it is
}

// scheduleHelp says how to write the command, for chat.
const scheduleHelp = "Say when, in a time zone: `schedule NEWS daily 06:00 Europe/Berlin`, `schedule NEWS weekdays 07:30 UTC`, `schedule NEWS cron 0 6 * * 1 Europe/Berlin`, `schedule NEWS cron @weekly UTC`, or `schedule NEWS off`. A board runs at most hourly."

// ParseScheduleCommand reads the words after `schedule`: [KEY] daily
// HH:MM ZONE, [KEY] weekdays HH:MM ZONE, [KEY] cron M H DOM MON DOW ZONE,
// [KEY] off, or [KEY] alone (show it).
func ParseScheduleCommand(args []string) (ScheduleCommand, error) {
	var c ScheduleCommand
	kinds := map[string]bool{"daily": true, "weekdays": true, "cron": true, "off": true}
	if len(args) > 0 && !kinds[strings.ToLower(args[0])] {
		c.Ref, args = args[0], args[1:]
	}
	if len(args) == 0 {
		c.Show = true
		return c, nil
	}
	kind, rest := strings.ToLower(args[0]), args[1:]
	switch {
	case kind == "off" && len(rest) == 0:
		c.Off = true
		return c, nil
	case (kind == "daily" || kind == "weekdays") && len(rest) == 2:
		cron, err := board.DailyCron(rest[0])
		if err != nil {
			return c, fmt.Errorf("%w. %s", err, scheduleHelp)
		}
		if kind == "weekdays" {
			cron = strings.TrimSuffix(cron, "*") + "1-5"
		}
		c.Cron, c.Timezone = cron, rest[1]
	case kind == "cron" && len(rest) >= 2:
		// The expression is checked by the rule, which says what is wrong
		// with it (too many fields, @every, 30 February).
		c.Cron, c.Timezone = strings.Join(rest[:len(rest)-1], " "), rest[len(rest)-1]
	default:
		return c, fmt.Errorf("%w: %s", board.ErrBadSchedule, scheduleHelp)
	}
	sc, err := board.ParseSchedule(c.Cron, c.Timezone)
	if err != nil {
		return c, fmt.Errorf("%w. %s", err, scheduleHelp)
	}
	c.Cron = sc.Expr
	return c, nil
}

// Schedule carries out a schedule command from chat for user in ch and
// answers it in a sentence; the board's thread is told of a change.
func (e *Engine) Schedule(ctx context.Context, ch board.Channel, user string, c ScheduleCommand) (string, error) {
	b, err := e.runBoard(ctx, ch, c.Ref)
	if err != nil {
		return "", err
	}
	switch {
	case c.Show:
		sc, err := e.deps.Runs.ScheduleOf(ctx, b.ID)
		if errors.Is(err, board.ErrNotFound) {
			return fmt.Sprintf("%s (%s) has no schedule. %s", b.Name, b.Key, scheduleHelp), nil
		}
		if err != nil {
			return "", unavailable("read the schedule", err)
		}
		return ScheduleText(b, sc, e.deps.Now()), nil
	case c.Off:
		err := e.deps.Runs.DeleteSchedule(ctx, b.ID, user)
		if errors.Is(err, board.ErrNotFound) {
			return fmt.Sprintf("%s (%s) had no schedule.", b.Name, b.Key), nil
		}
		if err != nil {
			return "", unavailable("remove the schedule", err)
		}
		e.tellRun(ctx, b.ID, fmt.Sprintf("%s no longer runs on a schedule (%s turned it off).", b.Key, user), board.BoardURL(e.cfg.PublicURL, b.ID))
		return fmt.Sprintf("%s (%s) no longer runs on a schedule.", b.Name, b.Key), nil
	}
	sc := board.Schedule{Board: b.ID, Cron: c.Cron, Timezone: c.Timezone, SetBy: user, LastSlot: e.deps.Now()}
	if err := e.deps.Runs.SetSchedule(ctx, sc); err != nil {
		return "", unavailable("set the schedule", err)
	}
	text := ScheduleText(b, sc, e.deps.Now())
	e.tellRun(ctx, b.ID, text+" (set by "+user+")", board.BoardURL(e.cfg.PublicURL, b.ID))
	return text, nil
}

// ScheduleText says a board's schedule and its next run in a sentence.
func ScheduleText(b board.Board, sc board.Schedule, now time.Time) string {
	next, err := sc.Next(now)
	if err != nil {
		return fmt.Sprintf("%s (%s) runs on `%s` (%s).", b.Name, b.Key, sc.Cron, sc.Timezone)
	}
	return fmt.Sprintf("%s (%s) runs on `%s` (%s); next run %s.", b.Name, b.Key, sc.Cron, sc.Timezone, next.Format("Mon 2 Jan 15:04 MST"))
}

// RunsLine says a board's schedule and latest run in a line for
// `status`, or "" when it has neither (or they cannot be read now: status
// is about the cards).
func (e *Engine) RunsLine(ctx context.Context, b board.Board) string {
	if e.deps.Runs == nil {
		return ""
	}
	var parts []string
	if sc, err := e.deps.Runs.ScheduleOf(ctx, b.ID); err == nil {
		if next, err := sc.Next(e.deps.Now()); err == nil {
			parts = append(parts, fmt.Sprintf("Runs on `%s` (%s), next %s.", sc.Cron, sc.Timezone, next.Format("Mon 2 Jan 15:04 MST")))
		}
	}
	if runs, err := e.deps.Runs.Runs(ctx, b.ID, 1); err == nil && len(runs) > 0 {
		parts = append(parts, fmt.Sprintf("Latest run: %d, %s — %s", runs[0].Number, runs[0].State, RunURL(e.cfg.PublicURL, runs[0])))
	}
	return strings.Join(parts, " ")
}

// PlannedScheduleText says a plan's schedule_board in a sentence for its
// preview, or "" when the plan schedules nothing.
func PlannedScheduleText(plan plan.Envelope) string {
	sc := plan.Schedule()
	if sc == nil {
		return ""
	}
	return fmt.Sprintf("Once approved, the board runs by itself on %s (%s): each run resets its cards and its runners work them again.", sc.Cron, sc.Timezone)
}
