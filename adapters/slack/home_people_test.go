package slack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
)

// homeMoveClick is a Move button pressed on a person's App Home in team.
func homeMoveClick(team, user, card, to string) string {
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "trigger_id": "T-home-move-" + team + user, "api_app_id": "A_BOBNET",
		"team": map[string]any{"id": team}, "user": map[string]any{"id": user, "team_id": team}, "is_enterprise_install": false,
		"container": map[string]any{"type": "view", "view_id": "V_HOME"},
		"view":      map[string]any{"id": "V_HOME", "type": "home", "callback_id": "bobnet_home", "team_id": team},
		"actions": []map[string]any{{"action_id": "bobnet_home_move:" + to, "block_id": "bobnet_home_card:" + card, "type": "button",
			"value": card + "|" + to, "action_ts": "1700000200.000001"}},
	})
	return "payload=" + url.QueryEscape(string(payload))
}

// slashCommand is /bobnet said in team's channel by user.
func slashCommand(team, channel, user, text string) string {
	return url.Values{"command": {"/bobnet"}, "team_id": {team}, "channel_id": {channel}, "user_id": {user}, "text": {text},
		"trigger_id": {"trig-" + team + user + text}}.Encode()
}

// TestSlackAppHomeByPersonID: cards are someone's by their person id,
// never by a name. `/bobnet assign NEWS-3 <@U_ANN|ann>` in workspace A
// stores A's person id; a person of workspace B whose display name is a
// role's ("Researcher"), and whose user id is that of an assignee in A,
// sees none of A's cards on their Home, and a forged Move click of theirs
// for A's card (validly signed) is refused and changes nothing; the
// person the card is assigned to sees it and moves it.
func TestSlackAppHomeByPersonID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newTeamsWorld(t)
	w.install(t, "T_A")
	tokB := w.install(t, "T_B")
	w.slack.mu.Lock()
	w.slack.names = map[string]string{"T_B/U_EVE": "Researcher", "T_A/U_EVE": "Eve", "T_A/U_ANN": "Ann"}
	w.slack.mu.Unlock()

	// A board in workspace A.
	const thread = "1690000000.000031"
	w.post(t, "/slack/events", "application/json", teamMention("T_A", "EvPeople1", "C0123", thread, "plan our daily research newspaper"))
	prev := w.slack.waitFor(t, "team A's preview", isTeamPreview(thread))
	pid := proposalID.FindStringSubmatch(prev.Form.Get("blocks"))[1]
	if _, err := w.env.Engine.Approve(ctx, board.ProposalID(pid), "U_ALICE"); err != nil {
		t.Fatal(err)
	}

	// Assigned by mention in A: A's person id, and the reply mentions her.
	status, body := w.postRead(t, "/slack/commands", "application/x-www-form-urlencoded", slashCommand("T_A", "C0123", "U_ALICE", "assign NEWS-3 <@U_ANN|ann>"))
	if status != http.StatusOK || !strings.Contains(body, "assigned to \\u003c@U_ANN\\u003e") {
		t.Fatalf("assign by mention: %d %s", status, body)
	}
	cardOf := func(number int) (id, assignee, status string, version int) {
		t.Helper()
		if err := w.env.Store.Pool().QueryRow(ctx, `SELECT c.id, c.assignee, c.status, c.version FROM cards c JOIN boards b ON b.id = c.board_id
			WHERE b.channel = 'slack:T_A/C0123' AND c.number = $1`, number).Scan(&id, &assignee, &status, &version); err != nil {
			t.Fatal(err)
		}
		return id, assignee, status, version
	}
	if _, assignee, _, _ := cardOf(3); assignee != "slack:T_A/U_ANN" {
		t.Fatalf("NEWS-3 is assigned to %q, want slack:T_A/U_ANN", assignee)
	}
	// A name Slack did not turn into a mention is refused; nothing changes.
	if _, body := w.postRead(t, "/slack/commands", "application/x-www-form-urlencoded", slashCommand("T_A", "C0123", "U_ALICE", "assign NEWS-3 @ann")); !strings.Contains(body, "not the person") {
		t.Errorf("assign by a bare name: %s", body)
	}
	// NEWS-1 goes to team A's U_EVE; NEWS-2 keeps a role, the display
	// name team B's U_EVE set.
	if _, body := w.postRead(t, "/slack/commands", "application/x-www-form-urlencoded", slashCommand("T_A", "C0123", "U_ALICE", "assign NEWS-1 <@U_EVE>")); !strings.Contains(body, "in_channel") {
		t.Fatalf("assign NEWS-1: %s", body)
	}
	// Slack shows a person of the workspace as a mention.
	unescape := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")
	for _, cmd := range []string{"next", "status"} {
		_, body := w.postRead(t, "/slack/commands", "application/x-www-form-urlencoded", slashCommand("T_A", "C0123", "U_ALICE", cmd))
		if !strings.Contains(unescape.Replace(body), "Define daily topic and source policy (<@U_EVE>, Ready)") &&
			!strings.Contains(unescape.Replace(body), "“Define daily topic and source policy” (<@U_EVE>, Ready)") {
			t.Errorf("/bobnet %s does not mention NEWS-1's assignee: %s", cmd, body)
		}
	}
	if _, assignee, _, _ := cardOf(2); assignee != "Researcher" {
		t.Fatalf("NEWS-2 is assigned to %q, want the role Researcher", assignee)
	}
	cardA, _, statusA, versionA := cardOf(1)

	openHome := func(team, user string) string {
		t.Helper()
		before := w.slack.count(func(c teamCall) bool { return c.Method == "views.publish" })
		w.post(t, "/slack/events", "application/json", teamEvent(team, "EvHome"+team+user+time.Now().Format("150405.000000"),
			map[string]any{"type": "app_home_opened", "user": user, "tab": "home", "channel": "D_" + user}))
		return w.homeOf(t, team, user, before, "opened", nil)
	}

	// A Home whose first block is a click's outcome.
	noticed := func(v string) bool {
		return !strings.Contains(homeNotice(v), "Waiting for your decision") && homeNotice(v) != ""
	}

	// Team B's U_EVE ("Researcher") sees none of A's cards.
	home := openHome("T_B", "U_EVE")
	if !strings.Contains(home, "No unfinished card is assigned to you.") || strings.Contains(home, "NEWS-") || strings.Contains(home, cardA) {
		t.Errorf("team B's Researcher sees team A's cards: %s", home)
	}
	// Her forged Move of A's card, validly signed, is refused.
	before := w.slack.count(func(c teamCall) bool { return c.Method == "views.publish" })
	if s := w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", homeMoveClick("T_B", "U_EVE", cardA, "In Progress")); s != http.StatusOK {
		t.Fatalf("click: %d", s)
	}
	forged := w.homeOf(t, "T_B", "U_EVE", before, "after the forged move", noticed)
	// It is answered as a click for a card nobody has.
	before = w.slack.count(func(c teamCall) bool { return c.Method == "views.publish" })
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", homeMoveClick("T_B", "U_EVE", string(board.NewCardID()), "In Progress"))
	nobodys := w.homeOf(t, "T_B", "U_EVE", before, "after a move of a card nobody has", noticed)
	if notice := homeNotice(forged); notice == "" || notice != homeNotice(nobodys) {
		t.Errorf("forged move answered %q, a card nobody has %q", notice, homeNotice(nobodys))
	}
	if _, assignee, st, v := cardOf(1); st != statusA || v != versionA || assignee != "slack:T_A/U_EVE" {
		t.Fatalf("team B's click changed team A's card: %s v%d %q (was %s v%d)", st, v, assignee, statusA, versionA)
	}
	if w.slack.count(func(c teamCall) bool {
		return c.Token == tokB && c.Method == "views.publish" && (strings.Contains(c.Body, cardA) || strings.Contains(c.Body, "Define daily"))
	}) != 0 {
		t.Error("team B was shown one of team A's cards")
	}

	// Team A's U_EVE sees her card and moves it; Ann sees hers only.
	home = openHome("T_A", "U_EVE")
	if !strings.Contains(home, "NEWS-1") || strings.Contains(home, "NEWS-2") || strings.Contains(home, "NEWS-3") || !strings.Contains(home, `bobnet_home_move:In Progress`) {
		t.Errorf("team A's U_EVE's home: %s", home)
	}
	before = w.slack.count(func(c teamCall) bool { return c.Method == "views.publish" })
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", homeMoveClick("T_A", "U_EVE", cardA, "In Progress"))
	w.homeOf(t, "T_A", "U_EVE", before, "answering her move", func(v string) bool { return strings.Contains(homeNotice(v), "moved from Ready to In Progress") })
	if _, _, st, _ := cardOf(1); st != "In Progress" {
		t.Fatalf("NEWS-1 is %s after its assignee's move", st)
	}
	if home := openHome("T_A", "U_ANN"); !strings.Contains(home, "NEWS-3") || strings.Contains(home, "NEWS-1") {
		t.Errorf("Ann's home: %s", home)
	}

	// An assignment refreshes the Homes of the person id it names, and no
	// one else's: team A's U_EVE, not team B's.
	publishedB := func() int {
		return w.slack.count(func(c teamCall) bool { return c.Method == "views.publish" && c.Token == tokB })
	}
	before, beforeB := w.slack.count(func(c teamCall) bool { return c.Method == "views.publish" }), publishedB()
	w.postRead(t, "/slack/commands", "application/x-www-form-urlencoded", slashCommand("T_A", "C0123", "U_ALICE", "assign NEWS-5 <@U_EVE|eve>"))
	w.homeOf(t, "T_A", "U_EVE", before, "refreshed by the assignment", func(v string) bool { return strings.Contains(v, "NEWS-5") })
	w.env.WaitIdle(t)
	time.Sleep(200 * time.Millisecond) // a refresh of team B's Home would come now
	if n := publishedB(); n != beforeB {
		t.Errorf("team B's Homes were published %d times for team A's assignment", n-beforeB)
	}
}

// homeNotice is the text of the first block of a published Home: the
// outcome of a click there.
func homeNotice(view string) string {
	var v struct {
		View struct {
			Blocks []struct {
				Text struct{ Text string }
			}
		}
	}
	if json.Unmarshal([]byte(view), &v) != nil || len(v.View.Blocks) == 0 {
		return ""
	}
	return v.View.Blocks[0].Text.Text
}

// homeOf waits for a Home of team's user published after the first
// `after` views.publish calls that satisfies ok (nil: any), and returns
// its view as text.
func (w *teamsWorld) homeOf(t *testing.T, team, user string, after int, what string, ok func(string) bool) string {
	t.Helper()
	tok := w.slack.token(team)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var pubs []teamCall
		for _, c := range w.slack.snapshot() {
			if c.Method == "views.publish" {
				pubs = append(pubs, c)
			}
		}
		for i := len(pubs) - 1; i >= after; i-- {
			if pubs[i].Token != tok || !strings.Contains(pubs[i].Body, `"user_id":"`+user+`"`) {
				continue
			}
			if v := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(pubs[i].Body); ok == nil || ok(v) {
				return v
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no home of %s/%s %s", team, user, what)
	return ""
}
