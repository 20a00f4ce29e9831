package bot

import (
	"strings"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
)

func planOf(board string, cards []plan.CardDraft, links ...plan.Link) plan.Envelope {
	return plan.Envelope{Kind: plan.KindProposeActions, Actions: []plan.Action{{
		Type: plan.ActionCreateBoardWithCards, Board: &plan.BoardDraft{Name: board}, Cards: cards, Links: links,
	}}}
}

func card(id, title, assignee string) plan.CardDraft {
	return plan.CardDraft{TempID: id, Title: title, Body: "b", Assignee: assignee, Status: "Backlog"}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	base := planOf("News", []plan.CardDraft{card("a", "Research", "Researcher"), card("b", "Write", "Planner"), card("c", "Review", "Reviewer")},
		plan.Link{Card: "b", DependsOn: "a"}, plan.Link{Card: "c", DependsOn: "b"})
	tests := []struct {
		name    string
		cur     plan.Envelope
		summary string
		check   func(*board.Changes) bool
	}{
		{"same", base, "no changes", func(c *board.Changes) bool { return c.Empty() }},
		{"added and removed", planOf("News", []plan.CardDraft{card("a", "Research", "Researcher"), card("b", "Write", "Planner"), card("d", "Publish", "Coder")},
			plan.Link{Card: "b", DependsOn: "a"}, plan.Link{Card: "d", DependsOn: "b"}),
			"1 card added, 1 removed, 1 link added, 1 link removed",
			func(c *board.Changes) bool {
				return c.Added[0] == "Publish" && c.Removed[0] == "Review" && c.LinksAdded[0] == "Publish → Write" && c.LinksRemoved[0] == "Review → Write"
			}},
		{"retitled and reassigned", planOf("News", []plan.CardDraft{card("a", "Research deeply", "Researcher"), card("b", "Write", "Coder"), card("c", "Review", "")},
			plan.Link{Card: "b", DependsOn: "a"}, plan.Link{Card: "c", DependsOn: "b"}),
			"1 retitled, 2 reassigned",
			func(c *board.Changes) bool {
				return c.Retitled[0] == board.Change{From: "Research", To: "Research deeply"} && c.Reassigned[1].To == "Unassigned" && len(c.LinksAdded) == 0
			}},
		{"renumbered temp ids match by title", planOf("News", []plan.CardDraft{card("x1", "Research", "Researcher"), card("x2", "Write", "Planner"), card("x3", "Review", "Reviewer")},
			plan.Link{Card: "x2", DependsOn: "x1"}, plan.Link{Card: "x3", DependsOn: "x2"}),
			"no changes", func(c *board.Changes) bool { return c.Empty() }},
		{"board renamed", planOf("Daily News", base.Actions[0].Cards, base.Actions[0].Links...), "board renamed",
			func(c *board.Changes) bool { return c.BoardChanged != nil && c.BoardChanged.To == "Daily News" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Diff(base, tt.cur)
			if got := c.Summary(); got != tt.summary {
				t.Errorf("summary = %q, want %q", got, tt.summary)
			}
			if !tt.check(c) {
				t.Errorf("changes = %+v", c)
			}
		})
	}
	if !strings.Contains(Diff(base, planOf("News", nil)).Summary(), "3 removed") {
		t.Error("all removed")
	}
}
