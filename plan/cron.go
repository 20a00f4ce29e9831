package plan

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// ErrBadSchedule means a cron expression or time zone is not one BobNet
// can use.
var ErrBadSchedule = errors.New("not a schedule")

// Descriptors are the named schedules a board may have besides five cron
// fields.
var Descriptors = []string{"@hourly", "@daily", "@weekly", "@monthly", "@yearly"}

// MaxCronLength bounds a cron expression; the database holds the same
// bound.
const MaxCronLength = 100

// cronFields parses the five standard cron fields (minute, hour, day of
// month, month, day of week) and the descriptors; robfig/cron is the
// well-kept parser for them. Which of them BobNet accepts is
// ParseSchedule's to say.
var cronFields = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Cron is a schedule the rule accepts: when a board runs by itself.
type Cron struct {
	// Expr is the expression, its fields separated by single spaces.
	Expr string
	// Zone is the time zone its fields are read in.
	Zone *time.Location
	// spec matches civil (wall-clock) times: its location is UTC, which
	// has no daylight saving; Next maps those times into Zone.
	spec *cron.SpecSchedule
}

// ParseSchedule is the one rule for what a schedule may be, used by the
// API, chat, the planner's validator and (as a looser format check) the
// database. A schedule is five cron fields (minute hour day-of-month
// month day-of-week) or one of Descriptors, in an IANA time zone
// ("Europe/Berlin", "UTC"). It is refused when it is @every, fires more
// often than hourly, or has no slot within a year (30 February). Time
// zones inside the expression (CRON_TZ=) are refused: the zone is its
// own field.
func ParseSchedule(expr, zone string) (Cron, error) {
	expr = strings.Join(strings.Fields(expr), " ")
	switch {
	case expr == "":
		return Cron{}, fmt.Errorf("%w: say when, as five cron fields (e.g. \"0 6 * * *\") or one of %s", ErrBadSchedule, strings.Join(Descriptors, ", "))
	case len(expr) > MaxCronLength:
		return Cron{}, fmt.Errorf("%w: the cron expression is longer than %d characters", ErrBadSchedule, MaxCronLength)
	case strings.Contains(expr, "TZ="):
		return Cron{}, fmt.Errorf("%w: give the time zone on its own, not in the cron expression", ErrBadSchedule)
	case strings.HasPrefix(expr, "@every"):
		return Cron{}, fmt.Errorf("%w: %q: @every is not a schedule here; a board runs at most hourly, at set times (e.g. \"@hourly\" or \"0 6 * * *\")", ErrBadSchedule, expr)
	case strings.HasPrefix(expr, "@") && !isDescriptor(expr):
		return Cron{}, fmt.Errorf("%w: %q is not one of %s", ErrBadSchedule, expr, strings.Join(Descriptors, ", "))
	case !strings.HasPrefix(expr, "@") && len(strings.Fields(expr)) != 5:
		return Cron{}, fmt.Errorf("%w: %q is not five cron fields (minute hour day-of-month month day-of-week, e.g. \"0 6 * * *\")", ErrBadSchedule, expr)
	}
	parsed, err := cronFields.Parse(expr)
	if err != nil {
		return Cron{}, fmt.Errorf("%w: %q: %w", ErrBadSchedule, expr, err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return Cron{}, fmt.Errorf("%w: %q is not five cron fields", ErrBadSchedule, expr)
	}
	civil := *spec
	civil.Location = time.UTC
	if bits.OnesCount64(civil.Minute) != 1 {
		return Cron{}, fmt.Errorf("%w: %q runs more often than hourly; give one minute of the hour (e.g. \"0 * * * *\" or \"@hourly\")", ErrBadSchedule, expr)
	}
	if !everyYear(&civil) {
		return Cron{}, fmt.Errorf("%w: %q has no slot within a year", ErrBadSchedule, expr)
	}
	zone = strings.TrimSpace(zone)
	if zone == "" || zone == "Local" {
		return Cron{}, fmt.Errorf("%w: name a time zone, such as Europe/Berlin or UTC", ErrBadSchedule)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return Cron{}, fmt.Errorf("%w: %q is not an IANA time zone (such as Europe/Berlin or UTC)", ErrBadSchedule, zone)
	}
	return Cron{Expr: expr, Zone: loc, spec: &civil}, nil
}

func isDescriptor(expr string) bool {
	for _, d := range Descriptors {
		if expr == d {
			return true
		}
	}
	return false
}

// everyYear says whether, from the start of each year of a leap-year
// cycle, the schedule's next slot comes within a year: 29 February alone
// does not, 30 February never does.
func everyYear(civil *cron.SpecSchedule) bool {
	for year := 2025; year < 2029; year++ {
		from := time.Date(year, time.January, 1, 0, 0, 0, 0, time.UTC).Add(-time.Second)
		next := civil.Next(from)
		if next.IsZero() || next.After(from.AddDate(1, 0, 0)) {
			return false
		}
	}
	return true
}

// Next is the schedule's first slot after after, in its zone; the zero
// time if it has none (it always has with a Cron from ParseSchedule).
// Slots are wall-clock times, and at daylight-saving changes each fires
// once: a time the clocks pass twice fires the first time, a time they
// skip fires at the first minute after the gap.
func (c Cron) Next(after time.Time) time.Time {
	if c.spec == nil {
		return time.Time{}
	}
	// Civil times in order map to instants in order (never back), so the
	// first civil slot whose instant is after after is the next slot.
	wall := civilOf(after.In(c.Zone))
	for range 8 {
		wall = c.spec.Next(wall)
		if wall.IsZero() {
			return time.Time{}
		}
		if t := instant(wall, c.Zone); t.After(after) {
			return t
		}
	}
	return time.Time{}
}

// civilOf is t's wall-clock reading, as a UTC time.
func civilOf(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// instant is when the clocks in loc read wall (a civil time given as UTC):
// the first such moment when they read it twice, and when they skip it,
// the moment they jump past it.
func instant(wall time.Time, loc *time.Location) time.Time {
	var first, lo, hi time.Time
	// The offsets in force from a day before wall to a day after it (the
	// moment wall names is within 14 hours of wall read as UTC).
	for _, probe := range []time.Duration{-26 * time.Hour, 0, 26 * time.Hour} {
		_, offset := wall.Add(probe).In(loc).Zone()
		t := wall.Add(-time.Duration(offset) * time.Second)
		if civilOf(t.In(loc)).Equal(wall) && (first.IsZero() || t.Before(first)) {
			first = t
		}
		if lo.IsZero() || t.Before(lo) {
			lo = t
		}
		if hi.IsZero() || t.After(hi) {
			hi = t
		}
	}
	if !first.IsZero() {
		return first.In(loc)
	}
	// Skipped: the clocks read before wall at lo and after it at hi; find
	// the moment they jump, to the second.
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if civilOf(mid.In(loc)).After(wall) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi.In(loc)
}
