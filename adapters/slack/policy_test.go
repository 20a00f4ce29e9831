package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/bobnet/bobnet/board"
)

func TestSlackQuorumTwoOfThree(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	if err := w.env.Store.PutPolicy(ctx, "slack:C_NEWS", board.Policy{Deciders: []string{"U_ALICE", "U_BOB", "U_CAROL"}, Approvals: 2, Budget: &board.Budget{TokensPerDay: 1_000_000}}, "test"); err != nil {
		t.Fatal(err)
	}
	w.post(t, "/slack/events", "application/json", mentionEvent("Ev101", "1690000000.000001", "plan our daily research newspaper"))
	preview := w.slack.waitFor(t, "preview", isPreview)
	if !strings.Contains(preview.blocks(), "0 of 2 approvals") || !strings.Contains(preview.blocks(), "does not count") {
		t.Fatalf("preview does not show the quorum: %s", preview.blocks())
	}
	pid := proposalID.FindStringSubmatch(preview.Form.Get("blocks"))[1]
	click := func(user string) {
		t.Helper()
		if resp := w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction(user, "bobnet_approve", pid, preview.TS)); resp.StatusCode != http.StatusOK {
			t.Fatalf("click by %s: %d", user, resp.StatusCode)
		}
	}
	ephemeralTo := func(user, text string) func(call) bool {
		return func(c call) bool {
			return c.Method == "chat.postEphemeral" && c.Form.Get("user") == user && strings.Contains(c.Form.Get("text"), text)
		}
	}

	// The requester's own approval is refused, naming the rule.
	click("U_ALICE")
	w.slack.waitFor(t, "self-approval refusal", ephemeralTo("U_ALICE", "self_approval is off"))
	click("U_MALLORY")
	w.slack.waitFor(t, "non-decider refusal", ephemeralTo("U_MALLORY", "lets only"))

	// One approval: the preview says 1 of 2 and keeps its buttons; no board.
	click("U_BOB")
	w.slack.waitFor(t, "1 of 2 notice", ephemeralTo("U_BOB", "1 of 2 approvals"))
	update := w.slack.waitFor(t, "preview updated to 1 of 2", func(c call) bool {
		return c.Method == "chat.update" && strings.Contains(c.blocks(), "1 of 2 approvals*: <@U_BOB>")
	})
	if !strings.Contains(update.blocks(), "bobnet_approve") || update.Form.Get("ts") != preview.TS {
		t.Fatalf("the 1-of-2 preview lost its buttons: %s", update.blocks())
	}
	if n := count(t, w, "SELECT count(*) FROM boards"); n != 0 {
		t.Fatalf("%d boards after one approval", n)
	}

	// The second approver creates the board.
	click("U_CAROL")
	w.slack.waitFor(t, "approved preview", func(c call) bool {
		return c.Method == "chat.update" && strings.Contains(c.blocks(), "Approved by <@U_CAROL>")
	})
	if n := count(t, w, "SELECT count(*) FROM boards"); n != 1 {
		t.Fatalf("%d boards, want 1", n)
	}

	// /bobnet policy shows the channel's policy.
	resp := w.post(t, "/slack/commands", "application/x-www-form-urlencoded", url.Values{"command": {"/bobnet"}, "text": {"policy"}, "channel_id": {"C_NEWS"}, "user_id": {"U_ALICE"}}.Encode())
	var reply struct{ Text string }
	_ = json.NewDecoder(resp.Body).Decode(&reply)
	for _, want := range []string{"policy slack:C_NEWS", "<@U_ALICE>, <@U_BOB>, <@U_CAROL>", "Approvals needed: 2", "does not count", "Model budget: 1000000 tokens a day"} {
		if !strings.Contains(reply.Text, want) {
			t.Errorf("/bobnet policy lacks %q: %s", want, reply.Text)
		}
	}
	// /bobnet status shows the channel's model use today.
	resp = w.post(t, "/slack/commands", "application/x-www-form-urlencoded", url.Values{"command": {"/bobnet"}, "text": {"status"}, "channel_id": {"C_NEWS"}, "user_id": {"U_ALICE"}}.Encode())
	var status struct{ Blocks []any }
	_ = json.NewDecoder(resp.Body).Decode(&status)
	sj, _ := json.Marshal(status.Blocks)
	if !regexp.MustCompile(`Model use today: [1-9]\d* of 1000000 tokens; resets 00:00 UTC`).Match(sj) {
		t.Fatalf("/bobnet status lacks today's model use: %s", sj)
	}
}

func TestSlackQuorumFiftyClicks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	if err := w.env.Store.PutPolicy(ctx, "slack:C_NEWS", board.Policy{Deciders: []string{"any_member"}, Approvals: 2}, "test"); err != nil {
		t.Fatal(err)
	}
	w.post(t, "/slack/events", "application/json", mentionEvent("Ev201", "1690000000.000001", "plan our daily research newspaper"))
	preview := w.slack.waitFor(t, "preview", isPreview)
	pid := proposalID.FindStringSubmatch(preview.Form.Get("blocks"))[1]
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_BOB", "bobnet_approve", pid, preview.TS))
	w.slack.waitFor(t, "1 of 2", func(c call) bool {
		return c.Method == "chat.update" && strings.Contains(c.blocks(), "1 of 2 approvals")
	})

	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction(fmt.Sprintf("U_%02d", i), "bobnet_approve", pid, preview.TS))
		})
	}
	wg.Wait()
	w.slack.waitFor(t, "approved preview", func(c call) bool {
		return c.Method == "chat.update" && strings.Contains(c.blocks(), "Approved by")
	})
	w.env.WaitIdle(t)
	if n := count(t, w, "SELECT count(*) FROM boards"); n != 1 {
		t.Fatalf("%d boards, want 1", n)
	}
	for _, c := range w.slack.snapshot() {
		if c.Method == "chat.postEphemeral" && (strings.Contains(c.Form.Get("text"), "being decided") || strings.Contains(c.Form.Get("text"), "did not work")) {
			t.Errorf("a completing approver was refused: %s", c.Form.Get("text"))
		}
	}
}

func TestSlackGroupDecides(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if err := w.env.Store.PutPolicy(context.Background(), "slack:C_NEWS", board.Policy{Deciders: []string{"slack_group:S_EDITORS"}, Approvals: 1}, "test"); err != nil {
		t.Fatal(err)
	}
	w.post(t, "/slack/events", "application/json", mentionEvent("Ev301", "1690000000.000001", "plan our daily research newspaper"))
	preview := w.slack.waitFor(t, "preview", isPreview)
	pid := proposalID.FindStringSubmatch(preview.Form.Get("blocks"))[1]
	// The requester is not in the group: refused, naming the rule.
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_ALICE", "bobnet_approve", pid, preview.TS))
	w.slack.waitFor(t, "refusal", func(c call) bool {
		return c.Method == "chat.postEphemeral" && c.Form.Get("user") == "U_ALICE" && strings.Contains(c.Form.Get("text"), "slack_group:S_EDITORS")
	})
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_EDITOR", "bobnet_approve", pid, preview.TS))
	w.slack.waitFor(t, "approved by the editor", func(c call) bool {
		return c.Method == "chat.update" && strings.Contains(c.blocks(), "Approved by <@U_EDITOR>")
	})
	if n := count(t, w, "SELECT count(*) FROM boards"); n != 1 {
		t.Fatalf("%d boards", n)
	}
}

func TestSlackWithdraw(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if err := w.env.Store.PutPolicy(context.Background(), "slack:C_NEWS", board.Policy{Deciders: []string{"any_member"}, Approvals: 2, SelfApproval: true}, "test"); err != nil {
		t.Fatal(err)
	}
	w.post(t, "/slack/events", "application/json", mentionEvent("Ev401", "1690000000.000001", "plan our daily research newspaper"))
	preview := w.slack.waitFor(t, "preview", isPreview)
	if strings.Contains(preview.blocks(), "bobnet_withdraw") {
		t.Fatalf("a preview without approvals offers to withdraw one: %s", preview.blocks())
	}
	pid := proposalID.FindStringSubmatch(preview.Form.Get("blocks"))[1]
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_BOB", "bobnet_approve", pid, preview.TS))
	w.slack.waitFor(t, "1 of 2 with a withdraw button", func(c call) bool {
		return c.Method == "chat.update" && strings.Contains(c.blocks(), "1 of 2 approvals") && strings.Contains(c.blocks(), "bobnet_withdraw")
	})
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_CAROL", "bobnet_withdraw", pid, preview.TS))
	w.slack.waitFor(t, "nothing to withdraw", func(c call) bool {
		return c.Method == "chat.postEphemeral" && c.Form.Get("user") == "U_CAROL" && strings.Contains(c.Form.Get("text"), "no approval")
	})
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", blockAction("U_BOB", "bobnet_withdraw", pid, preview.TS))
	w.slack.waitFor(t, "withdrawn notice", func(c call) bool {
		return c.Method == "chat.postEphemeral" && c.Form.Get("user") == "U_BOB" && strings.Contains(c.Form.Get("text"), "0 of 2")
	})
	w.slack.waitFor(t, "0 of 2 preview", func(c call) bool {
		return c.Method == "chat.update" && strings.Contains(c.blocks(), "0 of 2 approvals")
	})
	if n := count(t, w, "SELECT count(*) FROM boards"); n != 0 {
		t.Fatalf("%d boards", n)
	}
}
