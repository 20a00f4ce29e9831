package plan_test

import (
	"strings"
	"testing"

	"github.com/bobnet/bobnet/plan"
)

const newBoardWithCard = `{"type":"create_board_with_cards","board":{"name":"Daily newspaper","goal":"g"},"cards":[{"temp_id":"a","title":"Collect","body":"Collect the stories.","assignee":"Researcher","status":"Ready"}]}`

// TestScheduleBoard: a plan may schedule the board it creates, or the
// channel's board, once, with a cron and a time zone BobNet can read.
func TestScheduleBoard(t *testing.T) {
	t.Parallel()
	check := func(actions string, hasBoard bool) plan.Result {
		return plan.CheckJSON([]byte(`{"kind":"propose_actions","answer":"daily","actions":[`+actions+`]}`), plan.Options{HasTargetBoard: hasBoard})
	}
	res := check(newBoardWithCard+`,{"type":"schedule_board","cron":" 0 6 * * * ","timezone":"Europe/Berlin"}`, false)
	if !res.Valid {
		t.Fatalf("errors: %+v", res.Errors)
	}
	if sc := res.Plan.Schedule(); sc == nil || sc.Cron != "0 6 * * *" || sc.Timezone != "Europe/Berlin" {
		t.Fatalf("schedule = %+v", sc)
	}
	if res := check(`{"type":"schedule_board","cron":"30 7 * * 1-5","timezone":"UTC"}`, true); !res.Valid {
		t.Fatalf("the channel's board: %+v", res.Errors)
	}
	res = check(`{"type":"schedule_board","cron":" @weekly","timezone":"Europe/Berlin"}`, true)
	if !res.Valid || res.Plan.Schedule().Cron != "@weekly" {
		t.Fatalf("@weekly: %+v", res.Errors)
	}
	for _, bad := range []struct {
		actions  string
		hasBoard bool
		want     string
	}{
		{`{"type":"schedule_board","cron":"0 6 * * *","timezone":"UTC"}`, false, "schedule_board needs a board"},
		{newBoardWithCard + `,{"type":"schedule_board","cron":"0 6 * *","timezone":"UTC"}`, false, "five cron fields"},
		{newBoardWithCard + `,{"type":"schedule_board","cron":"0 6 * * *","timezone":"Mars/Base"}`, false, "not an IANA time zone"},
		{newBoardWithCard + `,{"type":"schedule_board","cron":"0 6 * * *"}`, false, "timezone"},
		{newBoardWithCard + `,{"type":"schedule_board","cron":"0 6 * * *","timezone":"UTC"},{"type":"schedule_board","cron":"0 7 * * *","timezone":"UTC"}`, false, "once, not 2 times"},
		{newBoardWithCard + `,{"type":"schedule_board","cron":"0 6 * * *","timezone":"UTC","cards":[]}`, false, "takes no cards"},
		{`{"type":"schedule_board","cron":"0 6 30 2 *","timezone":"UTC"}`, true, "actions[0].cron: \"0 6 30 2 *\" has no slot within a year"},
		{`{"type":"schedule_board","cron":"@every 1s","timezone":"UTC"}`, true, "@every is not a schedule"},
		{`{"type":"schedule_board","cron":"* * * * *","timezone":"UTC"}`, true, "more often than hourly"},
	} {
		res := check(bad.actions, bad.hasBoard)
		found := false
		for _, e := range res.Errors {
			found = found || strings.Contains(e.Path+": "+e.Message, bad.want)
		}
		if res.Valid || !found {
			t.Errorf("%s: valid %v, errors %+v; want %q", bad.actions, res.Valid, res.Errors, bad.want)
		}
	}
}
