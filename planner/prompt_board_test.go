package planner_test

import (
	"strings"
	"testing"

	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
)

func TestPromptNamesCardsByHandleAndOffersChanges(t *testing.T) {
	t.Parallel()
	msgs := planner.BuildPrompt(planner.PromptInput{
		Board:   &plan.BoardSummary{ID: "b_1", Name: "News", Cards: []plan.CardSummary{{ID: "c_1", Handle: "NEWS-1", Title: "Pick topics", Status: "Ready"}}},
		Message: "mark the topic card done",
	})
	var all strings.Builder
	for _, m := range msgs {
		all.WriteString(m.Content + "\n")
	}
	for _, want := range []string{`"type": "update_card"`, `"type": "add_links"`, "- [NEWS-1] Pick topics (Ready, Unassigned)", "only when every card it depends on is Done"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
}
