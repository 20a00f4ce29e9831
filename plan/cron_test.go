package plan_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/plan"
)

// TestScheduleRule: what a schedule may be. Five cron fields or a
// descriptor, at most hourly, with a slot within every year; never @every.
func TestScheduleRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cron, zone string
		want       string // "" when accepted; else part of the error
	}{
		{"0 6 * * *", "Europe/Berlin", ""},
		{"0 6 * * 1-5", "UTC", ""},
		{" 30  7 * *  1-5 ", "UTC", ""},
		{"@daily", "Europe/Berlin", ""},
		{"@weekly", "UTC", ""},
		{"@monthly", "UTC", ""},
		{"@yearly", "UTC", ""},
		{"@hourly", "UTC", ""},
		{"0 * * * *", "UTC", ""},
		{"15 */2 * * *", "UTC", ""},
		{"0 6 31 * *", "UTC", ""},
		{"0 0 1 1 *", "UTC", ""},
		{"0 6 30 2 *", "UTC", "has no slot within a year"},
		{"0 6 31 4,6,9,11 *", "UTC", "has no slot within a year"},
		{"0 6 29 2 *", "UTC", "has no slot within a year"},
		{"@every 1s", "UTC", "@every"},
		{"@every 24h", "UTC", "@every"},
		{"* * * * *", "UTC", "more often than hourly"},
		{"*/30 * * * *", "UTC", "more often than hourly"},
		{"0,30 6 * * *", "UTC", "more often than hourly"},
		{"0-1 6 * * *", "UTC", "more often than hourly"},
		{"@midnight", "UTC", "is not one of @hourly, @daily"},
		{"@reboot", "UTC", "is not one of"},
		{"0 6 * *", "UTC", "five cron fields"},
		{"0 0 6 * * *", "UTC", "five cron fields"},
		{"0 25 * * *", "UTC", "not a schedule"},
		{"", "UTC", "say when"},
		{strings.Repeat("1,", 60) + "1 * * * *", "UTC", "longer than 100"},
		{"CRON_TZ=UTC 0 6 * * *", "UTC", "time zone on its own"},
		{"0 6 * * *", "", "name a time zone"},
		{"0 6 * * *", "Local", "name a time zone"},
		{"0 6 * * *", "Mars/Olympus", "not an IANA time zone"},
	} {
		c, err := plan.ParseSchedule(tc.cron, tc.zone)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q %q: %v", tc.cron, tc.zone, err)
		case tc.want == "" && c.Expr != strings.Join(strings.Fields(tc.cron), " "):
			t.Errorf("%q: expr %q", tc.cron, c.Expr)
		case tc.want != "" && (!errors.Is(err, plan.ErrBadSchedule) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q %q: %v, want an ErrBadSchedule saying %q", tc.cron, tc.zone, err, tc.want)
		}
	}
}

// TestCronNextDST: slots are wall-clock times; at daylight-saving changes
// each fires once. Fixed clocks, Europe/Berlin 2026: clocks go forward
// 02:00 -> 03:00 on 29 March and back 03:00 -> 02:00 on 25 October.
func TestCronNextDST(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	utc := func(s string) time.Time {
		t.Helper()
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	slots := func(expr string, from, to time.Time) []string {
		t.Helper()
		c, err := plan.ParseSchedule(expr, "Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for s := c.Next(from); !s.IsZero() && !s.After(to); s = c.Next(s) {
			if s.Location().String() != berlin.String() {
				t.Fatalf("%v is not in Berlin time", s)
			}
			out = append(out, s.UTC().Format(time.RFC3339)+" "+s.Format("15:04 MST"))
			if len(out) > 100 {
				t.Fatal("runaway")
			}
		}
		return out
	}
	for _, tc := range []struct {
		name, expr string
		from, to   string
		want       []string
	}{
		{"the repeated 02:30 fires once, the first time (CEST)", "30 2 * * *", "2026-10-24T00:00:00Z", "2026-10-26T12:00:00Z",
			[]string{"2026-10-24T00:30:00Z 02:30 CEST", "2026-10-25T00:30:00Z 02:30 CEST", "2026-10-26T01:30:00Z 02:30 CET"}},
		{"the skipped 02:30 fires at 03:00", "30 2 * * *", "2026-03-28T00:00:00Z", "2026-03-30T12:00:00Z",
			[]string{"2026-03-28T01:30:00Z 02:30 CET", "2026-03-29T01:00:00Z 03:00 CEST", "2026-03-30T00:30:00Z 02:30 CEST"}},
		{"hourly through the repeated hour: once each hour", "@hourly", "2026-10-24T23:30:00Z", "2026-10-25T02:30:00Z",
			[]string{"2026-10-25T00:00:00Z 02:00 CEST", "2026-10-25T02:00:00Z 03:00 CET"}},
		{"hourly across the gap: 02:00 and 03:00 are one slot", "@hourly", "2026-03-28T23:30:00Z", "2026-03-29T02:30:00Z",
			[]string{"2026-03-29T00:00:00Z 01:00 CET", "2026-03-29T01:00:00Z 03:00 CEST", "2026-03-29T02:00:00Z 04:00 CEST"}},
		{"@daily is midnight in its zone", "@daily", "2026-07-01T12:00:00Z", "2026-07-03T12:00:00Z",
			[]string{"2026-07-01T22:00:00Z 00:00 CEST", "2026-07-02T22:00:00Z 00:00 CEST"}},
	} {
		got := slots(tc.expr, utc(tc.from), utc(tc.to))
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}

	// From inside the repeated hour (second pass, CET) the daily 02:30
	// does not fire again that day.
	c, _ := plan.ParseSchedule("30 2 * * *", "Europe/Berlin")
	if next := c.Next(utc("2026-10-25T01:10:00Z")); !next.Equal(utc("2026-10-26T01:30:00Z")) {
		t.Errorf("from 02:10 CET: next %v", next)
	}
	// Where the clocks skip midnight (Santiago, 6 September 2026), @daily
	// fires at 01:00, the first minute after the gap.
	santiago, err := plan.ParseSchedule("@daily", "America/Santiago")
	if err != nil {
		t.Fatal(err)
	}
	if next := santiago.Next(utc("2026-09-05T12:00:00Z")); next.Format("2006-01-02 15:04 -0700") != "2026-09-06 01:00 -0300" {
		t.Errorf("@daily in Santiago across the gap: %v", next)
	}
	// An unset Cron has no slot.
	if next := (plan.Cron{}).Next(utc("2026-10-25T01:10:00Z")); !next.IsZero() {
		t.Errorf("zero Cron: next %v", next)
	}
	// Zones without daylight saving and far from UTC.
	for _, z := range []struct{ zone, want string }{
		{"UTC", "2026-03-29T00:00:00Z"}, {"Asia/Kolkata", "2026-03-28T18:30:00Z"}, {"Pacific/Kiritimati", "2026-03-28T10:00:00Z"},
	} {
		c, err := plan.ParseSchedule("@daily", z.zone)
		if err != nil {
			t.Fatal(err)
		}
		if next := c.Next(utc("2026-03-28T08:00:00Z")); !next.Equal(utc(z.want)) {
			t.Errorf("@daily in %s: %v, want %s", z.zone, next.UTC(), z.want)
		}
	}
}
