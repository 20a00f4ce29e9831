package slack

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
)

var update = flag.Bool("update", false, "rewrite golden files")

var profiles = []string{"Coder", "Planner", "Researcher", "Reviewer"}

func proposalFrom(t *testing.T, raw string) board.Proposal {
	t.Helper()
	res := planner.Check([]byte(raw), plan.Options{Profiles: profiles})
	if !res.Valid {
		t.Fatal(res.Errors)
	}
	return board.Proposal{
		ID: "p_golden", Version: 1, RequestedBy: "U_ALICE", Plan: *res.Plan, Warnings: res.Warnings, State: board.ProposalPending,
		ExpiresAt: time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC),
		Thread:    board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: "C0NEWS"}, ID: "1700000000.000100"},
	}
}

// blocksJSON renders blocks as Slack receives them.
func blocksJSON(t *testing.T, blocks []slackapi.Block) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // show the text as Slack reads it
	enc.SetIndent("", "  ")
	if err := enc.Encode(blocks); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// golden compares got with a file under testdata/slack, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "../../testdata/slack/" + name
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; run with -update if the change is intended\ngot:\n%s", name, got)
	}
}

// limits checks Slack's message limits.
func limits(t *testing.T, blocks []slackapi.Block) {
	t.Helper()
	if len(blocks) > maxBlocks {
		t.Errorf("%d blocks", len(blocks))
	}
	for i, b := range blocks {
		switch v := b.(type) {
		case *slackapi.SectionBlock:
			if n := len([]rune(v.Text.Text)); n > maxSectionText {
				t.Errorf("block %d: section text %d chars", i, n)
			}
		case *slackapi.HeaderBlock:
			if n := len([]rune(v.Text.Text)); n > maxHeaderText {
				t.Errorf("block %d: header %d chars", i, n)
			}
		case *slackapi.ContextBlock:
			for _, e := range v.ContextElements.Elements {
				if tx, ok := e.(*slackapi.TextBlockObject); ok && len([]rune(tx.Text)) > maxContextText {
					t.Errorf("block %d: context %d chars", i, len([]rune(tx.Text)))
				}
			}
		}
	}
}

func TestPreviewGolden(t *testing.T) {
	t.Parallel()
	p := proposalFrom(t, plannertest.NewspaperPlan(t))
	blocks := PreviewBlocks(p, "https://bobnet.example.com")
	limits(t, blocks)
	golden(t, "preview-newspaper.json", blocksJSON(t, blocks))
	// Ten card sections, the three buttons carrying the proposal id.
	js := string(blocksJSON(t, blocks))
	for _, want := range []string{`"action_id": "bobnet_approve"`, `"action_id": "bobnet_revise"`, `"action_id": "bobnet_cancel"`, `"value": "p_golden"`, "Define daily topic and source policy"} {
		if !strings.Contains(js, want) {
			t.Errorf("preview lacks %s", want)
		}
	}
}

func TestPreviewHostileTextIsInert(t *testing.T) {
	t.Parallel()
	p := proposalFrom(t, plannertest.Testdata(t, "plans/valid-hostile-text.json"))
	p.Plan.Assumptions = append(p.Plan.Assumptions, "@channel please look <!here|here>")
	var blocks []any
	if err := json.Unmarshal(blocksJSON(t, PreviewBlocks(p, "https://bobnet.example.com")), &blocks); err != nil {
		t.Fatal(err)
	}
	var mrkdwnTexts, plainTexts []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if txt, ok := x["text"].(string); ok {
				if x["type"] == "mrkdwn" {
					mrkdwnTexts = append(mrkdwnTexts, txt)
				} else {
					plainTexts = append(plainTexts, txt)
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(blocks)
	all := strings.Join(mrkdwnTexts, "\n")
	// In mrkdwn every < from the model is an entity; the only live markup
	// is ours: the requester mention and the date.
	for _, bad := range []string{"<!channel>", "<!here", "<@U024BE7LH> ping", "<https://evil", "<script>", "@channel", "@here"} {
		if strings.Contains(all, bad) {
			t.Errorf("mrkdwn contains live %q", bad)
		}
	}
	for _, want := range []string{"@\u200dchannel please look &lt;!here|here&gt;"} {
		if !strings.Contains(all, want) {
			t.Errorf("mrkdwn lacks escaped %q", want)
		}
	}
	// Cards are task cards of the plan block: their titles and details
	// are plain text, shown as the model wrote them (Slack parses no
	// markup there), and ping nobody.
	var plan map[string]any
	for _, b := range blocks {
		if m := b.(map[string]any); m["type"] == "plan" {
			plan = m
		}
	}
	if plan == nil {
		t.Fatal("no plan block")
	}
	pj, _ := json.Marshal(plan)
	for _, want := range []string{`"title":"CHAN-1 · \u003c!channel\u003e \u003c@U024BE7LH\u003e ping \u003cscript\u003ealert(1)\u003c/script\u003e"`, `"type":"text"`} {
		if !strings.Contains(string(pj), want) {
			t.Errorf("plan block lacks %s: %s", want, pj)
		}
	}
	if strings.Contains(string(pj), "@channel") || strings.Contains(string(pj), "@here") {
		t.Errorf("plan block pings: %s", pj)
	}
	// plain_text is shown as typed (Slack parses no markup there), but
	// must not ping either.
	for _, txt := range plainTexts {
		if strings.Contains(txt, "@channel") || strings.Contains(txt, "@here") {
			t.Errorf("plain text pings: %q", txt)
		}
	}
}

func TestPreviewFoldsLargePlans(t *testing.T) {
	t.Parallel()
	a := plan.Action{Type: plan.ActionCreateBoardWithCards, Board: &plan.BoardDraft{Name: strings.Repeat("Very long board name ", 20), Goal: "g"}}
	for i := range 64 {
		a.Cards = append(a.Cards, plan.CardDraft{TempID: fmt.Sprint("c", i), Title: fmt.Sprint("Card ", i), Body: "b", Assignee: "Coder", Status: "Backlog", WorkspaceMode: "Direct",
			AcceptanceCriteria: []string{strings.Repeat("long criterion ", 60), strings.Repeat("another one ", 80), strings.Repeat("and more ", 100)}})
	}
	p := proposalFrom(t, plannertest.NewspaperPlan(t))
	p.Plan = plan.Envelope{Kind: plan.KindProposeActions, Actions: []plan.Action{a}}
	blocks := PreviewBlocks(p, "https://bobnet.example.com")
	limits(t, blocks)
	js := string(blocksJSON(t, blocks))
	if !strings.Contains(js, "more cards") || !strings.Contains(js, "https://bobnet.example.com/proposals/p_golden") {
		t.Error("no fold line linking the whole proposal")
	}
	if _, ok := blocks[len(blocks)-2].(*slackapi.ActionBlock); !ok {
		t.Error("buttons are not kept when folding")
	}
}

func TestDecidedBlocks(t *testing.T) {
	t.Parallel()
	p := proposalFrom(t, plannertest.NewspaperPlan(t))
	tests := []struct {
		state        board.ProposalState
		want         string
		proposeAgain bool
	}{
		{board.ProposalApproved, "Approved by <@U1> — <https://bobnet.example.com/boards/b_x|Open board>", false},
		{board.ProposalCancelled, "Cancelled by <@U1>", false},
		{board.ProposalSuperseded, "Superseded", false},
		{board.ProposalExpired, "Expired", true},
	}
	for _, tt := range tests {
		p.State, p.DecidedBy, p.BoardURL = tt.state, "U1", "https://bobnet.example.com/boards/b_x"
		js := string(blocksJSON(t, DecidedBlocks(p)))
		if !strings.Contains(js, tt.want) {
			t.Errorf("%s: lacks %q", tt.state, tt.want)
		}
		if strings.Contains(js, "bobnet_approve") || strings.Contains(js, "bobnet_cancel") {
			t.Errorf("%s: decision buttons remain", tt.state)
		}
		if strings.Contains(js, "bobnet_propose_again") != tt.proposeAgain {
			t.Errorf("%s: propose again button = %v", tt.state, !tt.proposeAgain)
		}
	}
}
