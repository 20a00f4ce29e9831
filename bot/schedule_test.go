package bot_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
)

func TestParseScheduleCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args string
		want bot.ScheduleCommand
	}{
		{"NEWS daily 06:00 Europe/Berlin", bot.ScheduleCommand{Ref: "NEWS", Cron: "0 6 * * *", Timezone: "Europe/Berlin"}},
		{"daily 6:30 UTC", bot.ScheduleCommand{Cron: "30 6 * * *", Timezone: "UTC"}},
		{"NEWS weekdays 07:15 UTC", bot.ScheduleCommand{Ref: "NEWS", Cron: "15 7 * * 1-5", Timezone: "UTC"}},
		{"NEWS cron 0 6 * * 1 Europe/Berlin", bot.ScheduleCommand{Ref: "NEWS", Cron: "0 6 * * 1", Timezone: "Europe/Berlin"}},
		{"NEWS cron @weekly Europe/Berlin", bot.ScheduleCommand{Ref: "NEWS", Cron: "@weekly", Timezone: "Europe/Berlin"}},
		{"cron @daily UTC", bot.ScheduleCommand{Cron: "@daily", Timezone: "UTC"}},
		{"NEWS off", bot.ScheduleCommand{Ref: "NEWS", Off: true}},
		{"NEWS", bot.ScheduleCommand{Ref: "NEWS", Show: true}},
		{"", bot.ScheduleCommand{Show: true}},
	} {
		got, err := bot.ParseScheduleCommand(strings.Fields(tc.args))
		if err != nil || got != tc.want {
			t.Errorf("%q = %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
	for _, bad := range []struct{ args, want string }{
		{"NEWS daily 25:00 UTC", "not a time of day"},
		{"NEWS daily 06:00 Mars/Base", "not an IANA time zone"},
		{"NEWS daily 06:00", "Say when"},
		{"NEWS hourly", "Say when"},
		{"NEWS cron 0 6 * * Europe/Berlin", "not five cron fields"},
		{"NEWS cron 0 6 30 2 * UTC", "has no slot within a year"},
		{"NEWS cron @every 1s UTC", "@every is not a schedule"},
		{"NEWS cron * * * * * UTC", "more often than hourly"},
		{"NEWS cron */30 * * * * UTC", "more often than hourly"},
		{"NEWS cron UTC", "Say when"},
	} {
		_, err := bot.ParseScheduleCommand(strings.Fields(bad.args))
		if !errors.Is(err, board.ErrBadSchedule) || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "schedule NEWS daily 06:00") {
			t.Errorf("%q: %v, want ErrBadSchedule saying %q and how to write it", bad.args, err, bad.want)
		}
	}
}

// TestScheduleFromChat: a schedule set from chat is kept with its next
// run, shown by `schedule` and `status`, told in the board's thread, and
// turned off.
func TestScheduleFromChat(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{Profiles: planner.ProfileNames(planner.DefaultProfiles())})
	out, err := env.Store.Execute(ctx, board.Execution{ProposalID: "p_schedchat", Channel: "console:news", Thread: "T1", ApprovedBy: "alice", Plan: *res.Plan})
	if err != nil {
		t.Fatal(err)
	}
	ch := board.Channel{Source: board.SourceConsole, ID: "news"}
	text, err := env.Engine.Schedule(ctx, ch, "alice", bot.ScheduleCommand{Cron: "0 6 * * *", Timezone: "Europe/Berlin"})
	if err != nil || !strings.Contains(text, "runs on `0 6 * * *` (Europe/Berlin); next run") {
		t.Fatalf("set: %q, %v", text, err)
	}
	if sc, err := env.Store.ScheduleOf(ctx, out.BoardID); err != nil || sc.SetBy != "alice" {
		t.Fatalf("kept: %+v %v", sc, err)
	}
	if text, err := env.Engine.Schedule(ctx, ch, "bob", bot.ScheduleCommand{Ref: "news", Show: true}); err != nil || !strings.Contains(text, "next run") {
		t.Fatalf("show: %q, %v", text, err)
	}
	b, _, _ := env.Store.Board(ctx, out.BoardID)
	if line := env.Engine.RunsLine(ctx, b); !strings.Contains(line, "Runs on `0 6 * * *` (Europe/Berlin), next") {
		t.Fatalf("status line %q", line)
	}
	env.Poster.WaitFor(t, "the schedule told in the thread", func(replies []bottest.PostedReply, _, _ []board.Proposal) bool {
		for _, r := range replies {
			if r.Thread.ID == "T1" && strings.Contains(r.Reply.Text, "(set by alice)") {
				return true
			}
		}
		return false
	})
	if text, err := env.Engine.Schedule(ctx, ch, "alice", bot.ScheduleCommand{Off: true}); err != nil || !strings.Contains(text, "no longer runs on a schedule") {
		t.Fatalf("off: %q, %v", text, err)
	}
	if _, err := env.Store.ScheduleOf(ctx, out.BoardID); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("still kept: %v", err)
	}
	if _, err := env.Engine.Schedule(ctx, ch, "alice", bot.ScheduleCommand{Ref: "NOPE", Show: true}); !errors.Is(err, bot.ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
}

// TestWeeklySchedulePlanApproved: a plan whose schedule_board says
// "@weekly" is a valid proposal, and approving it keeps the schedule (the
// database used to refuse descriptors, so approval failed). A plan asking
// for 30 February is not proposed: the rule's refusal is its issue.
func TestWeeklySchedulePlanApproved(t *testing.T) {
	t.Parallel()
	withSchedule := func(cron string) string {
		var p map[string]any
		if err := json.Unmarshal([]byte(plannertest.NewspaperPlan(t)), &p); err != nil {
			t.Fatal(err)
		}
		p["actions"] = append(p["actions"].([]any), map[string]any{"type": "schedule_board", "cron": cron, "timezone": "Europe/Berlin"})
		b, _ := json.Marshal(p)
		return string(b)
	}
	env := bottest.New(t)
	ctx := context.Background()
	var feb30 atomic.Bool
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply {
		if feb30.Load() {
			return plannertest.Reply{Content: withSchedule("0 6 30 2 *")}
		}
		return plannertest.Reply{Content: withSchedule("@weekly")}
	})
	id, err := env.Engine.Submit(ctx, board.Request{Thread: general, User: "alice", Text: "plan our research newspaper, weekly"})
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitRequest(t, id)
	p, err := env.Engine.Proposal(ctx, st.ProposalID)
	if err != nil || p.Plan.Schedule() == nil || p.Plan.Schedule().Cron != "@weekly" {
		t.Fatalf("proposal %q: %+v %v (%+v)", st.ProposalID, p.Plan.Schedule(), err, st)
	}
	ap, err := env.Engine.Approve(ctx, p.ID, "alice")
	if err != nil {
		t.Fatalf("approve @weekly: %v", err)
	}
	sc, err := env.Store.ScheduleOf(ctx, ap.BoardID)
	if err != nil || sc.Cron != "@weekly" || sc.Timezone != "Europe/Berlin" || sc.SetBy != "alice" {
		t.Fatalf("schedule: %+v %v", sc, err)
	}
	if next, err := sc.Next(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)); err != nil || next.Format(time.RFC3339) != "2026-11-29T00:00:00+01:00" {
		t.Fatalf("next = %v, %v; want Sunday midnight in Berlin", next, err)
	}

	feb30.Store(true)
	id, err = env.Engine.Submit(ctx, board.Request{Thread: board.Thread{Channel: general.Channel, ID: "T-feb"}, User: "alice", Text: "run it on 30 February"})
	if err != nil {
		t.Fatal(err)
	}
	st = env.WaitRequest(t, id)
	if st.ProposalID != "" || st.Reply == nil || !strings.Contains(st.Reply.Text, "has no slot within a year") {
		t.Fatalf("30 February: %+v %+v", st, st.Reply)
	}
}
