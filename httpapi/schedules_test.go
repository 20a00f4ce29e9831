package httpapi_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestScheduleAPI: a schedule is set with a cron and a time zone, answers
// its next slot, and is removed; what is not a schedule changes nothing.
func TestScheduleAPI(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{})
	out, err := s.Execute(ctx, board.Execution{ProposalID: "p_schedapi", Channel: "console:schedapi", Plan: *res.Plan})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	r := chi.NewRouter()
	httpapi.NewSchedules(s, func() time.Time { return now }).Routes(r)
	ts := httptest.NewServer(r)
	t.Cleanup(ts.Close)
	path := "/api/v1/boards/" + string(out.BoardID) + "/schedule"

	if code, _ := call(t, ts.URL, "GET", path, ""); code != 404 {
		t.Fatalf("no schedule yet: %d", code)
	}
	for _, bad := range []struct{ body, want string }{
		{`{"user":"alice","cron":"0 6 * *","timezone":"UTC"}`, "five cron fields"},
		{`{"user":"alice","cron":"0 6 * * *","timezone":"Mars/Olympus"}`, "not an IANA time zone"},
		{`{"user":"alice","cron":"0 6 * * *"}`, "name a time zone"},
		{`{"user":"alice","cron":"0 6 30 2 *","timezone":"UTC"}`, "has no slot within a year"},
		{`{"user":"alice","cron":"@every 1s","timezone":"UTC"}`, "@every is not a schedule"},
		{`{"user":"alice","cron":"* * * * *","timezone":"UTC"}`, "more often than hourly"},
		{`{"user":"alice","cron":"*/30 * * * *","timezone":"UTC"}`, "more often than hourly"},
	} {
		if code, got := call(t, ts.URL, "PUT", path, bad.body); code != 400 || !strings.Contains(got["error"].(string), bad.want) {
			t.Errorf("%s: %d %v", bad.body, code, got)
		}
	}
	if code, _ := call(t, ts.URL, "GET", path, ""); code != 404 {
		t.Fatalf("a bad schedule was kept: %d", code)
	}
	code, got := call(t, ts.URL, "PUT", path, `{"user":"alice","cron":"0 6 * * *","timezone":"Europe/Berlin"}`)
	if code != 200 || got["next"] != "2026-11-25T06:00:00+01:00" || got["set_by"] != "alice" {
		t.Fatalf("set: %d %v", code, got)
	}
	if code, got := call(t, ts.URL, "GET", path, ""); code != 200 || got["cron"] != "0 6 * * *" {
		t.Fatalf("read: %d %v", code, got)
	}
	// A descriptor is a schedule, kept as written: @daily is midnight in
	// its zone. Extra spaces are not kept.
	code, got = call(t, ts.URL, "PUT", path, `{"user":"alice","cron":"@daily","timezone":"Europe/Berlin"}`)
	if code != 200 || got["cron"] != "@daily" || got["next"] != "2026-11-25T00:00:00+01:00" {
		t.Fatalf("set @daily: %d %v", code, got)
	}
	if code, got := call(t, ts.URL, "GET", path, ""); code != 200 || got["cron"] != "@daily" {
		t.Fatalf("read @daily: %d %v", code, got)
	}
	code, got = call(t, ts.URL, "PUT", path, `{"user":"alice","cron":"  30   7 * * 1-5 ","timezone":"UTC"}`)
	if code != 200 || got["cron"] != "30 7 * * 1-5" || got["next"] != "2026-11-25T07:30:00Z" {
		t.Fatalf("set with spaces: %d %v", code, got)
	}
	if code, got := call(t, ts.URL, "DELETE", path, `{"user":"alice"}`); code != 200 {
		t.Fatalf("delete: %d %v", code, got)
	}
	if code, _ := call(t, ts.URL, "DELETE", path, `{"user":"alice"}`); code != 404 {
		t.Fatalf("delete again: %d", code)
	}
}
