package slack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
)

// slackBoard makes the newspaper board in C_NEWS through the engine, as a
// mention and an approval would, in thread 1690000000.000500.
func slackBoard(t *testing.T, w *world) board.ID {
	t.Helper()
	ctx := context.Background()
	thread := board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: "C_NEWS"}, ID: "1690000000.000500"}
	id, err := w.env.Engine.Submit(ctx, board.Request{Thread: thread, User: "U_ALICE", Text: "plan our daily research newspaper"})
	if err != nil {
		t.Fatal(err)
	}
	st := w.env.WaitRequest(t, id)
	a, err := w.env.Engine.Approve(ctx, st.ProposalID, "U_ALICE")
	if err != nil {
		t.Fatal(err)
	}
	return a.BoardID
}

// command runs a signed /bobnet slash command and returns its answer.
func (w *world) command(t *testing.T, user, text string) (responseType, answer string) {
	t.Helper()
	form := url.Values{"command": {"/bobnet"}, "text": {text}, "channel_id": {"C_NEWS"}, "user_id": {user}, "team_id": {"T1"}}
	resp := w.post(t, "/slack/commands", "application/x-www-form-urlencoded", form.Encode())
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/bobnet %s: %d", text, resp.StatusCode)
	}
	var r struct {
		ResponseType string `json:"response_type"`
		Text         string `json:"text"`
		Blocks       []json.RawMessage
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	for _, b := range r.Blocks {
		r.Text += "\n" + string(b)
	}
	return r.ResponseType, r.Text
}

func TestSlackCardCommands(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := slackBoard(t, w)

	kind, text := w.command(t, "U_BOB", "next")
	if kind != "ephemeral" || !strings.Contains(text, "NEWS-1 “Define daily topic and source policy”") {
		t.Fatalf("next = %s %q", kind, text)
	}
	// Starting a card before its dependency is Done is refused, naming it.
	kind, text = w.command(t, "U_BOB", "move NEWS-2 in progress")
	if kind != "ephemeral" || !strings.Contains(text, "NEWS-2 can't move to In Progress yet: it waits on NEWS-1") {
		t.Fatalf("early start = %s %q", kind, text)
	}
	kind, text = w.command(t, "U_BOB", "move define daily topic In Progress")
	if kind != "in_channel" || !strings.Contains(text, "NEWS-1 “Define daily topic and source policy” moved from Ready to In Progress by <@U_BOB>") {
		t.Fatalf("move = %s %q", kind, text)
	}
	kind, text = w.command(t, "U_BOB", "assign NEWS-1 researcher")
	if kind != "in_channel" || !strings.Contains(text, "assigned to Researcher (was Planner)") {
		t.Fatalf("assign = %s %q", kind, text)
	}
	kind, text = w.command(t, "U_BOB", "assign NEWS-1 astronaut")
	if kind != "ephemeral" || !strings.Contains(text, "unknown profile") {
		t.Fatalf("assign unknown = %s %q", kind, text)
	}
	kind, text = w.command(t, "U_BOB", "move NEWS-1")
	if kind != "ephemeral" || !strings.Contains(text, "Statuses: Backlog, Ready, In Progress, Review, Blocked, Done") {
		t.Fatalf("move without status = %s %q", kind, text)
	}
	if _, text = w.command(t, "U_BOB", "move NEWS-1 done"); !strings.Contains(text, "to Done") {
		t.Fatalf("done = %q", text)
	}
	// Done is told in the board's thread, never broadcast to the channel.
	told := w.slack.waitFor(t, "the Done announcement", func(c call) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.blocks(), "moved from In Progress to Done")
	})
	if told.Form.Get("thread_ts") != "1690000000.000500" || told.Form.Get("reply_broadcast") == "true" {
		t.Errorf("announcement posted as %v", told.Form)
	}
	// /bobnet status shows the moves.
	_, text = w.command(t, "U_BOB", "status")
	if !strings.Contains(text, "Done *1*") || !strings.Contains(text, "NEWS-2") {
		t.Errorf("status = %q", text)
	}
	events, _ := w.env.Store.Audit(context.Background(), board.AuditFilter{BoardID: id})
	n := 0
	for _, e := range events {
		if e.Action == "card_changed" && e.Actor == "U_BOB" && strings.Contains(string(e.Detail), `"via": "slack"`) {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d audited Slack changes, want 3", n)
	}
}

func TestPreviewShowsBoardChanges(t *testing.T) {
	t.Parallel()
	p := board.Proposal{ID: "p_1", Version: 1, RequestedBy: "U_ALICE", Plan: plan.Envelope{Kind: plan.KindProposeActions, Actions: []plan.Action{{Type: plan.ActionUpdateCard, Card: "NEWS-1"}}},
		BoardChanges: []board.BoardChange{{Card: "NEWS-1", Title: "Define <!channel> policy", Field: "status", From: "Ready", To: "Done"}}}
	js, _ := json.Marshal(slack.PreviewBlocks(p, "https://bobnet.example.com"))
	text := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(js))
	for _, want := range []string{"Changes to this channel's board", "Changes to the board (now → after approval):", "NEWS-1 “Define &lt;!channel&gt; policy”: status Ready → Done"} {
		if !strings.Contains(text, want) {
			t.Errorf("preview lacks %q:\n%s", want, text)
		}
	}
}
