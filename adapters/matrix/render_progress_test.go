package matrix

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
)

// A draft and a run's progress keep model text inert, as the preview
// does, and say what they show: draft cards as drafts, each run card's
// status.
func TestRenderProgressKeepsModelTextInert(t *testing.T) {
	t.Parallel()
	const public = "https://bobnet.example.com"
	d := bot.Draft{Request: "r_1", Title: hostile[0], Cards: HostilePlan().Actions[0].Cards}
	run := board.Run{ID: "u_1", Number: 3, State: board.RunDone, Reason: hostile[3]}
	statuses := []struct {
		status string
		failed bool
	}{{"Backlog", false}, {"Ready", false}, {"In Progress", false}, {"Review", false}, {"Done", false}, {"In Progress", true}, {"Done", false}}
	for i, h := range hostile {
		st := statuses[i%len(statuses)]
		c := board.RunCard{Handle: fmt.Sprintf("BN-%d", i+1), Title: h, Assignee: h, Status: st.status}
		if st.failed {
			c.Error = h
		}
		run.Cards = append(run.Cards, c)
	}
	cases := map[string]message{
		"draft":         renderDraft(d),
		"run":           renderRunProgress(bot.RunProgress{BoardTitle: hostile[0], Run: run}),
		"run ended":     renderRunProgress(bot.RunProgress{BoardTitle: hostile[0], Run: run, Ended: true, EditionURL: public + "/boards/b_x/runs/3"}),
		"empty draft":   renderDraft(bot.Draft{Request: "r_1"}),
		"no title yet":  renderDraft(bot.Draft{Request: "r_1", Cards: []plan.CardDraft{{Title: hostile[2]}}}),
		"run of nobody": renderRunProgress(bot.RunProgress{BoardTitle: hostile[0], Run: board.Run{ID: "u_2", Number: 1}}),
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			AssertInert(t, m.HTML, m.Plain, public)
		})
	}
	dm := cases["draft"]
	if !strings.Contains(dm.HTML, "&lt;script&gt;") || strings.Count(dm.HTML, "(draft)") != len(hostile) || strings.Count(dm.Plain, "(draft)") != len(hostile) {
		t.Errorf("the draft does not list every card as a draft, escaped:\n%s\n%s", dm.HTML, dm.Plain)
	}
	if !strings.Contains(cases["empty draft"].Plain, "Drafting a plan") {
		t.Errorf("empty draft: %q", cases["empty draft"].Plain)
	}
	rm := cases["run"]
	for _, want := range []string{"⏳", "🔄", "✔️", "⚠️", "· pending", "· in progress", "· complete", "· error", "2 of 7 cards complete · 2 in progress · 1 failed"} {
		if !strings.Contains(rm.Plain, want) {
			t.Errorf("run progress lacks %q:\n%s", want, rm.Plain)
		}
	}
	if strings.Contains(rm.HTML, "<a ") || strings.Contains(rm.Plain, "run done") {
		t.Errorf("a running run shows an end or a link:\n%s", rm.HTML)
	}
	em := cases["run ended"]
	if !strings.Contains(em.HTML, `<a href="`+public+`/boards/b_x/runs/3">Read the edition</a>`) || !strings.Contains(em.Plain, public+"/boards/b_x/runs/3") || !strings.Contains(em.Plain, "🏁 Run 3") || !strings.Contains(em.Plain, "run done (@\u2060room look at this)") {
		t.Errorf("the ended run lacks its end or edition link:\n%s\n%s", em.HTML, em.Plain)
	}
}

// A plan's notices list at most maxNoteCards cards and count the rest.
func TestRenderProgressCountsWhatItDoesNotList(t *testing.T) {
	t.Parallel()
	var cards []plan.CardDraft
	var run board.Run
	for i := range maxNoteCards + 5 {
		cards = append(cards, plan.CardDraft{Title: fmt.Sprint("card ", i)})
		run.Cards = append(run.Cards, board.RunCard{Handle: fmt.Sprint("BN-", i), Title: fmt.Sprint("card ", i), Status: "Done"})
	}
	d := renderDraft(bot.Draft{Cards: cards})
	if strings.Count(d.HTML, "<li>") != maxNoteCards || !strings.Contains(d.HTML, "(and 5 more)") {
		t.Errorf("draft of %d cards:\n%s", len(cards), d.HTML)
	}
	r := renderRunProgress(bot.RunProgress{Run: run})
	if strings.Count(r.HTML, "<li>") != maxNoteCards || !strings.Contains(r.Plain, "…and 5 more cards") || !strings.Contains(r.Plain, fmt.Sprintf("%d of %d cards complete", len(cards), len(cards))) {
		t.Errorf("run of %d cards:\n%s", len(cards), r.Plain)
	}
}
