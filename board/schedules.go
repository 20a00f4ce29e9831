package board

import (
	"time"

	"github.com/bobnet/bobnet/plan"
)

// ErrBadSchedule means a cron expression or time zone is not one BobNet
// can use (plan.ErrBadSchedule).
var ErrBadSchedule = plan.ErrBadSchedule

// ParseSchedule checks a schedule against the one rule for what a
// schedule may be; see plan.ParseSchedule.
func ParseSchedule(expr, zone string) (plan.Cron, error) {
	return plan.ParseSchedule(expr, zone)
}

// DailyCron turns chat's "daily 06:00" into "0 6 * * *".
func DailyCron(hhmm string) (string, error) { return plan.DailyCron(hhmm) }

// Next is the schedule's next slot after after, in its time zone.
func (sc Schedule) Next(after time.Time) (time.Time, error) {
	c, err := ParseSchedule(sc.Cron, sc.Timezone)
	if err != nil {
		return time.Time{}, err
	}
	return c.Next(after), nil
}

// Schedule is when a board runs by itself: five cron fields or a
// descriptor (@daily), in an IANA time zone. LastSlot is the latest slot fired, or when the schedule was
// set: slots after it are due.
type Schedule struct {
	Board    ID        `json:"board_id"`
	Cron     string    `json:"cron"`
	Timezone string    `json:"timezone"`
	SetBy    string    `json:"set_by"`
	LastSlot time.Time `json:"last_slot"`
}
