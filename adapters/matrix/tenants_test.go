package matrix_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// TestTenantIsolationMatrix is the Matrix part of the tenant-isolation
// suite (the Slack part is adapters/slack's TestTenantIsolationSlack): a
// room on Dendrite whose people try every room verb of the command table
// (bot.Verbs) on another room's board key, card handle and board id. Each
// answer must be the answer for a name nobody has, and the other room's
// boards must stay as they were.
func TestTenantIsolationMatrix(t *testing.T) {
	w := newWorld(t)
	w.start()
	w.openRoom()
	ctx := context.Background()

	// Another room has two newspaper boards: NEWS and NEWS2. NEWS2 is a
	// key this room does not have.
	checked := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{Profiles: []string{"Coder", "Planner", "Researcher", "Reviewer"}})
	if !checked.Valid {
		t.Fatalf("newspaper plan: %+v", checked.Errors)
	}
	const other = "matrix:!other-room:elsewhere.example"
	var theirs board.Board
	for i := range 2 {
		res, err := w.env.Store.Execute(ctx, board.Execution{ProposalID: board.ProposalID("p_otherroom" + strconv.Itoa(i)), Channel: other, Plan: *checked.Plan})
		if err != nil {
			t.Fatal(err)
		}
		if theirs, _, err = w.env.Store.Board(ctx, res.BoardID); err != nil {
			t.Fatal(err)
		}
	}
	if theirs.Key != "NEWS2" {
		t.Fatalf("the other room's second board has key %s", theirs.Key)
	}
	stateOf := func() string {
		_, cards, err := w.env.Store.Board(ctx, theirs.ID)
		if err != nil {
			t.Fatal(err)
		}
		runs, _ := w.env.Store.Runs(ctx, theirs.ID, 10)
		_, serr := w.env.Store.ScheduleOf(ctx, theirs.ID)
		var sb strings.Builder
		for _, c := range cards {
			sb.WriteString(c.Handle + " " + c.Status + " " + c.Assignee + "\n")
		}
		sb.WriteString(strconv.Itoa(len(runs)) + " runs; schedule: " + strconv.FormatBool(serr == nil))
		return sb.String()
	}
	before := stateOf()

	h := theirs.Key + "-1"
	cases := map[string][2]string{
		"plan":     {"plan", "plan"},
		"status":   {"status " + string(theirs.ID), "status b_" + strings.Repeat("a", 26)},
		"next":     {"next", "next"},
		"move":     {"move " + h + " done", "move ZZZZ-1 done"},
		"assign":   {"assign " + h + " none", "assign ZZZZ-1 none"},
		"run":      {"run " + theirs.Key, "run ZZZZ"},
		"runs":     {"runs " + theirs.Key, "runs ZZZZ"},
		"schedule": {"schedule " + theirs.Key + " cron 0 6 * * * UTC", "schedule ZZZZ cron 0 6 * * * UTC"},
		"accept":   {"accept " + h, "accept ZZZZ-1"},
		"sendback": {"sendback " + h + " cite the sources", "sendback ZZZZ-1 cite the sources"},
		"policy":   {"policy", "policy"},
		"leave":    {}, // names nothing, and would end the test's room
	}
	answer := func(text string) string {
		cmd := w.say(w.carol, "!bobnet "+text, "", false)
		e := w.waitFor("answer to "+text, func(e *event.Event) bool {
			m, ok := e.Content.Parsed.(*event.MessageEventContent)
			return ok && e.Sender == w.bot.ID && m.RelatesTo != nil && m.RelatesTo.EventID == cmd && m.RelatesTo.Type == "m.thread"
		})
		return bodyOf(e)
	}
	for _, v := range bot.Verbs {
		if v.Thread {
			continue // the thread verbs act on their own thread's proposal
		}
		c, ok := cases[v.Name]
		if !ok {
			t.Errorf("verb %q has no case in the tenant-isolation suite", v.Name)
			continue
		}
		if c[0] == "" {
			continue
		}
		theirsAnswer := answer(c[0])
		if strings.Contains(theirsAnswer, helpIntro) {
			t.Errorf("!bobnet %s is not dispatched: it answers with help", c[0])
		}
		for _, leak := range []string{string(theirs.ID), "other-room", "elsewhere.example"} {
			if strings.Contains(theirsAnswer, leak) {
				t.Errorf("!bobnet %s shows %q of the other room: %s", c[0], leak, theirsAnswer)
			}
		}
		if c[0] != c[1] {
			if none := answer(c[1]); none != theirsAnswer {
				t.Errorf("!bobnet %s answers %q, but for a name nobody has %q", c[0], theirsAnswer, none)
			}
		}
	}
	// Help is made of the table: every verb is listed.
	help := answer("help")
	for _, v := range bot.Verbs {
		call := "!bobnet " + v.Name
		if v.Thread {
			call = "!" + v.Name
		}
		if !strings.Contains(help, "• "+call) {
			t.Errorf("!bobnet help does not list %s:\n%s", call, help)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if after := stateOf(); after != before {
		t.Errorf("the room changed another room's board:\nbefore %s\nafter %s", before, after)
	}
}

// helpIntro starts the help, which answers a word that is no verb.
const helpIntro = "BobNet turns a request into a board of cards you approve."
