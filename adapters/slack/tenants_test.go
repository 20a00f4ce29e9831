package slack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// The tenant-isolation suite for Slack: two workspaces installed through
// OAuth, each with its own boards. Workspace B tries every verb of the
// command table (bot.Verbs) and every button and modal on workspace A's
// keys, handles, board ids, proposals and run cards. Each answer must be
// the answer for a key, handle, id or proposal nobody has, byte for byte;
// nothing of A's may change, and A's threads hear nothing.

// tenantWorld is two workspaces: A with two newspaper boards (NEWS in
// C0123, NEWS2 in C0124, a run going and a schedule on NEWS2) and a
// pending proposal in C0125; B with its own first newspaper board in C0555.
type tenantWorld struct {
	*teamsWorld
	tokA, tokB string
	// boardA is A's NEWS2 board: a key B does not have.
	boardA  board.Board
	pending board.Proposal // A's pending proposal
	review  board.RunJob   // A's card waiting for review
}

// approveIn makes a newspaper board in team's channel and returns it.
func (w *tenantWorld) approveIn(t *testing.T, team, channel, thread string) board.Board {
	t.Helper()
	w.post(t, "/slack/events", "application/json", teamMention(team, "Ev"+team+channel, channel, thread, "plan our daily research newspaper"))
	prev := w.slack.waitFor(t, team+"'s preview in "+channel, isTeamPreview(thread))
	pid := board.ProposalID(proposalID.FindStringSubmatch(prev.Form.Get("blocks"))[1])
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", teamClick(team, "U_ALICE", "bobnet_approve", string(pid), channel, prev.TS, thread))
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err := w.env.Engine.Proposal(context.Background(), pid)
		if err == nil && p.BoardID != "" {
			b, _, err := w.env.Store.Board(context.Background(), p.BoardID)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's proposal in %s never approved: %+v %v", team, channel, p, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// slash runs /bobnet text as user of team in channel and returns the
// answer's body; each call has a fresh trigger id.
func (w *tenantWorld) slash(t *testing.T, team, channel, text string) string {
	t.Helper()
	status, body := w.postRead(t, "/slack/commands", "application/x-www-form-urlencoded", url.Values{
		"command": {"/bobnet"}, "text": {text}, "team_id": {team}, "channel_id": {channel}, "user_id": {"U_MALLORY"},
		"trigger_id": {"trig-" + strconv.FormatInt(time.Now().UnixNano(), 36)},
	}.Encode())
	if status != http.StatusOK {
		t.Fatalf("/bobnet %s: %d %s", text, status, body)
	}
	return body
}

func newTenantWorld(t *testing.T) *tenantWorld {
	t.Helper()
	w := &tenantWorld{teamsWorld: newTeamsWorld(t)}
	w.tokA, w.tokB = w.install(t, "T_A"), w.install(t, "T_B")
	if b := w.approveIn(t, "T_A", "C0123", "1690000000.000011"); b.Key != "NEWS" {
		t.Fatalf("A's first board has key %s", b.Key)
	}
	w.boardA = w.approveIn(t, "T_A", "C0124", "1690000000.000012")
	if w.boardA.Key != "NEWS2" {
		t.Fatalf("A's second board has key %s", w.boardA.Key)
	}
	// B's first newspaper board gets NEWS: nothing says A has one.
	if b := w.approveIn(t, "T_B", "C0555", "1690000000.000021"); b.Key != "NEWS" {
		t.Fatalf("B's first Daily Research Newspaper board has key %s, want NEWS", b.Key)
	}
	if body := w.slash(t, "T_A", "C0124", "run"); !strings.Contains(body, "Run 1 started") {
		t.Fatalf("A's run: %s", body)
	}
	if body := w.slash(t, "T_A", "C0124", "schedule daily 06:00 Europe/Berlin"); !strings.Contains(body, "06:00") {
		t.Fatalf("A's schedule: %s", body)
	}
	w.review = w.env.WorkForReview(t, "A's output")
	if w.review.Run.Board != w.boardA.ID {
		t.Fatalf("the card under review is of board %s, want A's %s", w.review.Run.Board, w.boardA.ID)
	}
	w.post(t, "/slack/events", "application/json", teamMention("T_A", "EvApending", "C0125", "1690000000.000013", "plan our daily research newspaper"))
	prev := w.slack.waitFor(t, "A's pending preview", isTeamPreview("1690000000.000013"))
	p, err := w.env.Engine.Proposal(context.Background(), board.ProposalID(proposalID.FindStringSubmatch(prev.Form.Get("blocks"))[1]))
	if err != nil {
		t.Fatal(err)
	}
	w.pending = p
	w.env.WaitIdle(t)
	return w
}

// stateOf is everything of A's that B must not change, as text.
func (w *tenantWorld) stateOfA(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var sb strings.Builder
	for _, ch := range []string{"slack:T_A/C0123", "slack:T_A/C0124"} {
		b, err := w.env.Store.ChannelBoard(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		_, cards, err := w.env.Store.Board(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cards {
			sb.WriteString(c.Handle + " " + c.Status + " " + c.Assignee + " v" + strconv.Itoa(c.Version) + "\n")
		}
		runs, err := w.env.Store.Runs(ctx, b.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			sb.WriteString(string(r.ID) + " " + string(r.State) + " by " + r.StartedBy + "\n")
			for _, rc := range r.Cards {
				sb.WriteString("  " + rc.Handle + " " + rc.Status + " " + strconv.Itoa(rc.Attempts) + "\n")
			}
		}
		sc, err := w.env.Store.ScheduleOf(ctx, b.ID)
		if err == nil {
			sb.WriteString(sc.Cron + " " + sc.Timezone + " " + sc.SetBy + "\n")
		}
	}
	p, err := w.env.Engine.Proposal(ctx, w.pending.ID)
	if err != nil {
		t.Fatal(err)
	}
	sb.WriteString("pending " + string(p.State) + "\n")
	return sb.String()
}

// leaks lists what of A's an answer to B shows: A's board ids, run ids,
// proposal ids, channel or URLs.
func (w *tenantWorld) leaks(answer string) []string {
	var out []string
	for _, s := range []string{string(w.boardA.ID), string(w.review.Run.ID), string(w.pending.ID), "T_A", "C0124", "/boards/" + string(w.boardA.ID)} {
		if strings.Contains(answer, s) {
			out = append(out, s)
		}
	}
	return out
}

// unusedBoardID is a well-formed board id nobody has.
const unusedBoardID = "b_aaaaaaaaaaaaaaaaaaaaaaaaaa"

// verbCases are, for each verb of the command table, its command with A's
// name and with a name nobody has. Verbs that name nothing (plan, next,
// policy) are tried as they are and must show nothing of A's.
func (w *tenantWorld) verbCases() map[string][2]string {
	h := w.boardA.Key + "-1"
	return map[string][2]string{
		"plan":     {"plan", "plan"},
		"status":   {"status " + string(w.boardA.ID), "status " + unusedBoardID},
		"next":     {"next", "next"},
		"move":     {"move " + h + " done", "move ZZZZ-1 done"},
		"assign":   {"assign " + h + " none", "assign ZZZZ-1 none"},
		"run":      {"run " + w.boardA.Key, "run ZZZZ"},
		"runs":     {"runs " + w.boardA.Key, "runs ZZZZ"},
		"schedule": {"schedule " + w.boardA.Key + " cron 0 6 * * * UTC", "schedule ZZZZ cron 0 6 * * * UTC"},
		"accept":   {"accept " + w.review.RunCard.Handle, "accept ZZZZ-1"},
		"sendback": {"sendback " + w.review.RunCard.Handle + " cite the sources", "sendback ZZZZ-1 cite the sources"},
		"policy":   {"policy", "policy"},
	}
}

// TestTenantIsolationSlack is the suite: every verb, button and modal from
// workspace B on workspace A's names.
func TestTenantIsolationSlack(t *testing.T) {
	t.Parallel()
	w := newTenantWorld(t)
	before := w.stateOfA(t)
	callsBefore := len(w.slack.snapshot())
	cases := w.verbCases()

	// Every verb of the table has a case: a verb added without one fails
	// here.
	for _, v := range bot.Verbs {
		if v.MatrixOnly {
			continue
		}
		if _, ok := cases[v.Name]; !ok {
			t.Errorf("verb %q has no case in the tenant-isolation suite", v.Name)
		}
	}
	for _, v := range bot.Verbs {
		c, ok := cases[v.Name]
		if !ok || v.MatrixOnly {
			continue
		}
		for _, channel := range []string{"C0555", "C0999"} { // B's board's channel, a channel without one
			withA := w.slash(t, "T_B", channel, c[0])
			unused := w.slash(t, "T_B", channel, c[1])
			if strings.Contains(withA, "turns a request into a board") {
				t.Errorf("/bobnet %s is not dispatched: it answers with help", c[0])
			}
			if l := w.leaks(withA); len(l) > 0 {
				t.Errorf("/bobnet %s in B's %s shows %v of A: %s", c[0], channel, l, withA)
			}
			if c[0] != c[1] && withA != unused {
				t.Errorf("/bobnet %s in B's %s answers\n  %s\nbut for a name nobody has\n  %s", c[0], channel, withA, unused)
			}
		}
	}

	// Help is made of the table: every verb Slack has is listed.
	help := w.slash(t, "T_B", "C0555", "help")
	for _, v := range bot.Verbs {
		if listed := strings.Contains(help, "`/bobnet "+v.Name); listed == v.MatrixOnly {
			t.Errorf("/bobnet help lists %q: %v, want %v:\n%s", v.Name, listed, !v.MatrixOnly, help)
		}
	}

	// Buttons and modals naming A's proposal or run card, sent by B with a
	// valid signature and A's own channel, message and thread.
	refusals := func() []string {
		var out []string
		for _, c := range w.slack.snapshot()[callsBefore:] {
			if c.Method == "chat.postEphemeral" && c.Token == w.tokB {
				out = append(out, c.Form.Get("text"))
			}
		}
		return out
	}
	click := func(action, value string) string {
		n := len(refusals())
		w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", teamClick("T_B", "U_MALLORY", action, value, "C0125", string(w.pending.Message), w.pending.Thread.ID))
		deadline := time.Now().Add(10 * time.Second)
		for len(refusals()) == n {
			if time.Now().After(deadline) {
				t.Fatalf("no refusal for B's %s of %s", action, value)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return refusals()[n]
	}
	for _, action := range []string{"bobnet_approve", "bobnet_revise", "bobnet_cancel", "bobnet_propose_again", "bobnet_withdraw"} {
		withA, unused := click(action, string(w.pending.ID)), click(action, "p_aaaaaaaaaaaaaaaaaaaaaaaaaa")
		if withA != unused || len(w.leaks(withA)) > 0 {
			t.Errorf("B's %s of A's proposal: %q; of none: %q", action, withA, unused)
		}
	}
	reviewValue := string(w.review.Run.ID) + " " + string(w.review.RunCard.Card) + " " + strconv.Itoa(w.review.RunCard.Rounds)
	unusedReview := "r_aaaaaaaaaaaaaaaaaaaaaaaaaa " + string(w.review.RunCard.Card) + " 0"
	for _, action := range []string{"bobnet_review_accept", "bobnet_review_sendback"} {
		withA, unused := click(action, reviewValue), click(action, unusedReview)
		if withA != unused || len(w.leaks(withA)) > 0 {
			t.Errorf("B's %s of A's card: %q; of none: %q", action, withA, unused)
		}
	}
	modal := func(callback string, meta any, values map[string]any) string {
		m, _ := json.Marshal(meta)
		payload, _ := json.Marshal(map[string]any{
			"type": "view_submission", "user": map[string]any{"id": "U_MALLORY", "team_id": "T_B"}, "team": map[string]any{"id": "T_B"},
			"view": map[string]any{"callback_id": callback, "private_metadata": string(m), "state": map[string]any{"values": values}},
		})
		_, body := w.postRead(t, "/slack/interactivity", "application/x-www-form-urlencoded", "payload="+url.QueryEscape(string(payload)))
		return body
	}
	for _, m := range []struct {
		callback, block, input string
		metaA, metaNone        map[string]any
	}{
		{"bobnet_revise_modal", "feedback", "feedback_input", map[string]any{"p": string(w.pending.ID), "c": "T_A/C0125", "t": w.pending.Thread.ID}, map[string]any{"p": "p_aaaaaaaaaaaaaaaaaaaaaaaaaa", "c": "T_A/C0125"}},
		{"bobnet_cancel_modal", "reason", "reason_input", map[string]any{"p": string(w.pending.ID), "c": "T_A/C0125", "t": w.pending.Thread.ID}, map[string]any{"p": "p_aaaaaaaaaaaaaaaaaaaaaaaaaa", "c": "T_A/C0125"}},
		{"bobnet_sendback_modal", "sendback_reason", "sendback_reason_input", map[string]any{"r": string(w.review.Run.ID), "k": string(w.review.RunCard.Card), "n": w.review.RunCard.Rounds, "c": "T_A/C0124"}, map[string]any{"r": "r_aaaaaaaaaaaaaaaaaaaaaaaaaa", "k": string(w.review.RunCard.Card), "c": "T_A/C0124"}},
	} {
		values := map[string]any{m.block: map[string]any{m.input: map[string]any{"type": "plain_text_input", "value": "make it weekly"}}}
		withA, unused := modal(m.callback, m.metaA, values), modal(m.callback, m.metaNone, values)
		if withA != unused || len(w.leaks(withA)) > 0 {
			t.Errorf("B's %s modal on A's: %s; on none: %s", m.callback, withA, unused)
		}
	}

	// B's App Home, opened and clicked: a Move of A's card under review
	// (by id, as a forged button would name it).
	homeBefore := w.slack.count(func(c teamCall) bool { return c.Method == "views.publish" })
	w.post(t, "/slack/events", "application/json", teamEvent("T_B", "EvHomeMallory",
		map[string]any{"type": "app_home_opened", "user": "U_MALLORY", "tab": "home", "channel": "D_U_MALLORY"}))
	if home := w.homeOf(t, "T_B", "U_MALLORY", homeBefore, "opened", nil); len(w.leaks(home)) > 0 || strings.Contains(home, w.boardA.Key+"-") {
		t.Errorf("B's App Home shows A's boards or cards: %s", home)
	}
	homeBefore = w.slack.count(func(c teamCall) bool { return c.Method == "views.publish" })
	w.post(t, "/slack/interactivity", "application/x-www-form-urlencoded", homeMoveClick("T_B", "U_MALLORY", string(w.review.RunCard.Card), "Done"))
	if home := w.homeOf(t, "T_B", "U_MALLORY", homeBefore, "after the forged move", nil); len(w.leaks(home)) > 0 {
		t.Errorf("B's App Home after a Move of A's card shows A's: %s", home)
	}

	w.env.WaitIdle(t)
	time.Sleep(200 * time.Millisecond) // posts made after the ack
	if after := w.stateOfA(t); after != before {
		t.Errorf("workspace B changed workspace A's boards, runs, schedule or proposal:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	for _, c := range w.slack.snapshot()[callsBefore:] {
		if c.Token == w.tokA {
			t.Errorf("workspace A heard of B's tries: %s %v", c.Method, c.Form)
		}
	}
}

// TestVerbTableIsAnswered: every verb of the command table that Slack
// has is answered by /bobnet as itself, not with the help text, and the
// help lists it.
func TestVerbTableIsAnswered(t *testing.T) {
	t.Parallel()
	w := newTeamsWorld(t)
	w.install(t, "T_A")
	_, help := w.postRead(t, "/slack/commands", "application/x-www-form-urlencoded",
		url.Values{"command": {"/bobnet"}, "text": {"help"}, "team_id": {"T_A"}, "channel_id": {"C1"}, "user_id": {"U1"}}.Encode())
	var helpReply struct{ Text string }
	_ = json.Unmarshal([]byte(help), &helpReply)
	verbWord := regexp.MustCompile("`/bobnet ([a-z]+)")
	var listed []string
	for _, m := range verbWord.FindAllStringSubmatch(helpReply.Text, -1) {
		listed = append(listed, m[1])
	}
	for _, v := range bot.Verbs {
		if v.MatrixOnly {
			continue
		}
		if !slices.Contains(listed, v.Name) {
			t.Errorf("help does not list %q: %s", v.Name, helpReply.Text)
		}
		_, body := w.postRead(t, "/slack/commands", "application/x-www-form-urlencoded",
			url.Values{"command": {"/bobnet"}, "text": {v.Name}, "team_id": {"T_A"}, "channel_id": {"C1"}, "user_id": {"U1"}, "trigger_id": {"trig-" + v.Name}}.Encode())
		if body == help {
			t.Errorf("/bobnet %s answers with the help text: the command switch does not know it", v.Name)
		}
	}
}
