package plan

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// ActionScheduleBoard runs a board on a schedule: {"type":"schedule_board",
// "cron":"0 6 * * *","timezone":"Europe/Berlin"} schedules the board the
// plan creates, or, in a plan that creates none, the channel's current
// board. It goes through approval like every other action.
const ActionScheduleBoard ActionType = "schedule_board"

// cronFields parses the five standard cron fields (minute, hour, day of
// month, month, day of week) and the @daily-style descriptors; robfig/cron
// is the well-kept parser for them.
var cronFields = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ErrBadSchedule means a cron expression or time zone is not one BobNet
// can use.
var ErrBadSchedule = errors.New("not a schedule")

// ParseSchedule checks a five-field cron expression and an IANA time zone
// ("Europe/Berlin"; "UTC"). Time zones inside the expression (CRON_TZ=)
// are refused: the zone is its own field.
func ParseSchedule(expr, zone string) (cron.Schedule, *time.Location, error) {
	expr = strings.TrimSpace(expr)
	if strings.Contains(expr, "TZ=") {
		return nil, nil, fmt.Errorf("%w: give the time zone on its own, not in the cron expression", ErrBadSchedule)
	}
	if len(strings.Fields(expr)) != 5 && !strings.HasPrefix(expr, "@") {
		return nil, nil, fmt.Errorf("%w: %q is not five cron fields (minute hour day-of-month month day-of-week, e.g. \"0 6 * * *\")", ErrBadSchedule, expr)
	}
	sched, err := cronFields.Parse(expr)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %q: %w", ErrBadSchedule, expr, err)
	}
	zone = strings.TrimSpace(zone)
	if zone == "" || zone == "Local" {
		return nil, nil, fmt.Errorf("%w: name a time zone, such as Europe/Berlin or UTC", ErrBadSchedule)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %q is not an IANA time zone (such as Europe/Berlin or UTC)", ErrBadSchedule, zone)
	}
	return sched, loc, nil
}

// DailyCron turns chat's "daily 06:00" into "0 6 * * *".
func DailyCron(hhmm string) (string, error) {
	t, err := time.Parse("15:04", strings.TrimSpace(hhmm))
	if err != nil {
		return "", fmt.Errorf("%w: %q is not a time of day such as 06:00", ErrBadSchedule, hhmm)
	}
	return fmt.Sprintf("%d %d * * *", t.Minute(), t.Hour()), nil
}

// scheduleAction reads a schedule_board action: cron and timezone, and
// nothing else.
func (v *validator) scheduleAction(m map[string]any, path string, a Action) Action {
	a.Cards, a.Links = []CardDraft{}, []Link{}
	for _, field := range []string{"board", "cards", "links", "card"} {
		if raw, ok := m[field]; ok && raw != nil {
			v.errorf(join(path, field), "schedule_board takes no %s: it schedules the board the plan creates, or else the channel's current board", field)
		}
	}
	a.Cron = strings.TrimSpace(v.required(m, path, "cron", 100))
	a.Timezone = strings.TrimSpace(v.required(m, path, "timezone", 64))
	if a.Cron != "" && a.Timezone != "" {
		if _, _, err := ParseSchedule(a.Cron, a.Timezone); err != nil {
			v.errorf(join(path, "cron"), "%s", strings.TrimPrefix(err.Error(), ErrBadSchedule.Error()+": "))
		}
	}
	return a
}

// checkSchedules allows one schedule_board a plan, with a board to
// schedule.
func (v *validator) checkSchedules(env *Envelope) {
	n, creates := 0, false
	for _, a := range env.Actions {
		switch a.Type {
		case ActionScheduleBoard:
			n++
		case ActionCreateBoard, ActionCreateBoardWithCards:
			creates = true
		}
	}
	switch {
	case n > 1:
		v.errorf("actions", "a plan may schedule its board once, not %d times", n)
	case n == 1 && !creates && !v.opts.HasTargetBoard:
		v.errorf("actions", "schedule_board needs a board: create one in the same plan, or ask in a channel that has one")
	}
}

// Schedule is the plan's schedule_board action, if it has one.
func (e Envelope) Schedule() *Action {
	for i := range e.Actions {
		if e.Actions[i].Type == ActionScheduleBoard {
			return &e.Actions[i]
		}
	}
	return nil
}
