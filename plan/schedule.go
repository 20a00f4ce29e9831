package plan

import (
	"fmt"
	"strings"
	"time"
)

// ActionScheduleBoard runs a board on a schedule: {"type":"schedule_board",
// "cron":"0 6 * * *","timezone":"Europe/Berlin"} schedules the board the
// plan creates, or, in a plan that creates none, the channel's current
// board. It goes through approval like every other action.
const ActionScheduleBoard ActionType = "schedule_board"

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
	a.Cron = strings.TrimSpace(v.required(m, path, "cron", MaxCronLength))
	a.Timezone = strings.TrimSpace(v.required(m, path, "timezone", 64))
	if a.Cron != "" && a.Timezone != "" {
		c, err := ParseSchedule(a.Cron, a.Timezone)
		if err != nil {
			v.errorf(join(path, "cron"), "%s", strings.TrimPrefix(err.Error(), ErrBadSchedule.Error()+": "))
		} else {
			a.Cron = c.Expr
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
