package matrix_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// approvedBoard has alice ask for the newspaper and approve it, and
// returns the request (the board's thread root).
func (w *world) approvedBoard() id.EventID {
	w.t.Helper()
	req := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	pv := w.waitFor("preview", w.preview(req, 1))
	w.react(w.alice, pv.ID, "✅")
	w.waitFor("board link", w.fromBot(req, "created with 10 cards and 13 links"))
	return req
}

// join has alice invite u to the room and u join it.
func (w *world) join(u *user) {
	t := w.t
	t.Helper()
	if _, err := w.alice.cli.InviteUser(ctx30(t), w.room, &mautrix.ReqInviteUser{UserID: u.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.cli.JoinRoomByID(ctx30(t), w.room); err != nil {
		t.Fatal(err)
	}
	w.waitJoined(u.ID)
}

// setPower has alice (the room's creator) give u a power level.
func (w *world) setPower(u *user, level int) {
	t := w.t
	t.Helper()
	var pl event.PowerLevelsEventContent
	if err := w.alice.cli.StateEvent(ctx30(t), w.room, event.StatePowerLevels, "", &pl); err != nil {
		t.Fatal(err)
	}
	pl.SetUserLevel(u.ID, level)
	if _, err := w.alice.cli.SendStateEvent(ctx30(t), w.room, event.StatePowerLevels, "", &pl); err != nil {
		t.Fatal(err)
	}
}

func (w *world) noBoard(why string) {
	w.t.Helper()
	if _, err := w.env.Engine.ChannelStatus(context.Background(), board.Channel{Source: board.SourceMatrix, ID: string(w.room)}); !errors.Is(err, bot.ErrNotFound) {
		w.t.Fatalf("a board exists %s: %v", why, err)
	}
}

func TestMatrixCardCommands(t *testing.T) {
	w := newWorld(t)
	w.start()
	w.openRoom()
	req := w.approvedBoard()
	st := w.checkBoard(10, 13)

	// Starting a card before its dependency is Done is refused, naming it.
	early := w.say(w.carol, "!bobnet move NEWS-2 in progress", "", false)
	w.waitFor("early start refused", w.fromBot(early, "NEWS-2 can't move to In Progress yet: it waits on NEWS-1 “Define daily topic and source policy” (Ready)"))
	unknown := w.say(w.carol, "!bobnet move NEWS-99 done", "", false)
	w.waitFor("unknown card", w.fromBot(unknown, "I can't find that card"))
	usage := w.say(w.carol, "!bobnet move NEWS-1", "", false)
	w.waitFor("usage", w.fromBot(usage, "Statuses: Backlog, Ready, In Progress, Review, Blocked, Done"))

	next := w.say(w.carol, "!bobnet next", "", false)
	w.waitFor("next", w.fromBot(next, "NEWS-1 “Define daily topic and source policy”"))

	mv := w.say(w.carol, "!bobnet move NEWS-1 done", "", false)
	moved := w.waitFor("move", w.fromBot(mv, "NEWS-1 “Define daily topic and source policy” moved from Ready to Done by "+string(w.carol.ID)))
	if f := moved.Content.AsMessage().FormattedBody; !strings.Contains(f, `<a href="`+board.BoardURL(publicURL, st.Board.ID)+"#") {
		t.Errorf("no link to the card: %q", f)
	}
	// Done is told in the board's thread too.
	w.waitFor("Done announced in the board's thread", w.fromBot(req, "moved from Ready to Done"))

	as := w.say(w.carol, "!bobnet assign NEWS-2 reviewer", "", false)
	w.waitFor("assign", w.fromBot(as, "assigned to Reviewer (was Researcher)"))
	bad := w.say(w.carol, "!bobnet assign NEWS-2 astronaut", "", false)
	w.waitFor("unknown profile", w.fromBot(bad, "unknown profile"))

	// A person is assigned by their user id, or by a pill whose body text
	// is their display name: stored as their person id, shown as the id.
	person := w.say(w.carol, "!bobnet assign NEWS-2 "+string(w.alice.ID), "", false)
	w.waitFor("assign a user id", w.fromBot(person, "assigned to "+string(w.alice.ID)+" (was Reviewer)"))
	pill, err := w.carol.cli.SendMessageEvent(ctx30(t), w.room, event.EventMessage, &event.MessageEventContent{
		MsgType: event.MsgText, Body: "!bobnet assign NEWS-2 Carol C.", Format: event.FormatHTML,
		FormattedBody: `!bobnet assign NEWS-2 <a href="https://matrix.to/#/` + string(w.carol.ID) + `">Carol C.</a>`,
		Mentions:      &event.Mentions{UserIDs: []id.UserID{w.carol.ID}},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.waitFor("assign a pill", w.fromBot(pill.EventID, "assigned to "+string(w.carol.ID)+" (was "+string(w.alice.ID)+")"))
	var assignee string
	if err := w.env.Store.Pool().QueryRow(context.Background(), `SELECT assignee FROM cards WHERE board_id = $1 AND number = 2`, st.Board.ID).Scan(&assignee); err != nil || assignee != "matrix:"+string(w.carol.ID) {
		t.Fatalf("NEWS-2 is assigned to %q (%v), want carol's person id", assignee, err)
	}
	name := w.say(w.carol, "!bobnet assign NEWS-2 @carol", "", false)
	w.waitFor("a name refused", w.fromBot(name, "is no person BobNet can tell"))
	now := w.say(w.carol, "!bobnet move researcher a in progress", "", false)
	w.waitFor("move by title", w.fromBot(now, "NEWS-2 “Researcher A: factual and background research” moved from Backlog to In Progress"))

	status := w.say(w.alice, "!bobnet status", "", false)
	sm := w.waitFor("status", w.fromBot(status, "Daily Research Newspaper")).Content.AsMessage()
	if !strings.Contains(sm.Body, "In Progress 1") || !strings.Contains(sm.Body, "Done 1") {
		t.Errorf("status does not show the moves: %q", sm.Body)
	}

	events, err := w.env.Store.Audit(context.Background(), board.AuditFilter{BoardID: st.Board.ID})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events {
		if e.Action == "card_changed" && e.Actor == string(w.carol.ID) && strings.Contains(string(e.Detail), `"via": "matrix"`) {
			n++
		}
	}
	if n != 5 {
		t.Errorf("%d audited Matrix card changes, want 5 (move, three assigns, move)", n)
	}
}

func TestMatrixPowerLevelDecides(t *testing.T) {
	w := newWorld(t)
	r := w.start()
	w.openRoom()
	key := "matrix:" + string(w.room)
	if err := w.env.Store.PutPolicy(context.Background(), key, board.Policy{Deciders: []string{"matrix_power:50"}, Approvals: 1, SelfApproval: true}, "test"); err != nil {
		t.Fatal(err)
	}
	if lvl, err := r.ad.PowerLevel(ctx30(t), string(w.room), string(w.alice.ID)); err != nil || lvl < 100 {
		t.Fatalf("alice, the creator, has level %d (%v), want 100 or more", lvl, err)
	}
	if lvl, err := r.ad.PowerLevel(ctx30(t), string(w.room), string(w.carol.ID)); err != nil || lvl != 0 {
		t.Fatalf("carol has level %d (%v), want 0", lvl, err)
	}

	// Carol asks; at level 0 she may not decide, even her own plan.
	req := w.say(w.carol, "BobNet plan our daily research newspaper", "", true)
	pv := w.waitFor("preview", w.preview(req, 1))
	if b := pv.Content.AsMessage().Body; !strings.Contains(b, "decided under policy "+key+" by members at power level 50 or above") {
		t.Fatalf("the preview does not say which policy decides: %q", b)
	}
	w.react(w.carol, pv.ID, "✅")
	w.waitFor("refusal", w.fromBot(req, string(w.carol.ID)+": You can't do that here: the "+key+" policy lets only matrix_power:50 decide"))
	w.noBoard("after a level-0 approval")

	// Made a moderator, she decides.
	w.setPower(w.carol, 50)
	w.react(w.carol, pv.ID, "👍")
	w.waitFor("approved", w.edit(pv.ID, "Approved by "+string(w.carol.ID)))
	w.checkBoard(10, 13)
	if n := w.count(w.fromBot(req, "You can't do that here")); n != 1 {
		t.Fatalf("%d refusal notices, want one", n)
	}
}

func TestMatrixQuorumTwoOfThree(t *testing.T) {
	w := newWorld(t)
	w.start()
	w.openRoom()
	hs, secret := homeserver(t)
	bob := register(t, hs, secret, "bob-")
	w.join(bob)
	key := "matrix:" + string(w.room)
	if err := w.env.Store.PutPolicy(context.Background(), key, board.Policy{
		Deciders: []string{string(w.alice.ID), string(bob.ID), string(w.carol.ID)}, Approvals: 2, Budget: &board.Budget{TokensPerDay: 1_000_000},
	}, "test"); err != nil {
		t.Fatal(err)
	}

	req := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	pv := w.waitFor("preview", w.preview(req, 1))
	m := pv.Content.AsMessage()
	if !strings.Contains(m.Body, "0 of 2 approvals") || !strings.Contains(m.Body, "the requester's own approval does not count") ||
		!strings.Contains(m.FormattedBody, "0 of 2 approvals") {
		t.Fatalf("the preview does not show the quorum: %q", m.Body)
	}

	// The requester's own approval is refused, naming the rule.
	w.react(w.alice, pv.ID, "✅")
	w.waitFor("self-approval refusal", w.fromBot(req, string(w.alice.ID)+": You can't do that here: self_approval is off"))

	// One approval: the preview says 1 of 2; no board.
	w.react(bob, pv.ID, "✅")
	w.waitFor("preview edited to 1 of 2", w.edit(pv.ID, "1 of 2 approvals: "+string(bob.ID)))
	told := w.waitFor("bob told", w.fromBot(req, string(bob.ID)+": your approval is recorded: 1 of 2 approvals"))
	w.noBoard("after one of two approvals")

	// Bob takes it back, and gives it again.
	w.say(bob, "!withdraw", req, false)
	w.waitFor("preview edited to 0 of 2", w.edit(pv.ID, "0 of 2 approvals"))
	w.waitFor("withdrawal told", w.fromBot(req, string(bob.ID)+": your approval is withdrawn: 0 of 2 approvals now"))
	w.say(w.carol, "!withdraw", req, false)
	w.waitFor("nothing to withdraw", w.fromBot(req, string(w.carol.ID)+": You have no approval of this proposal to withdraw"))
	w.say(bob, "!approve", req, false)
	w.waitFor("bob told again", func(e *event.Event) bool {
		return e.ID != told.ID && w.fromBot(req, string(bob.ID)+": your approval is recorded: 1 of 2 approvals")(e)
	})
	w.noBoard("after one of two approvals, withdrawn and given again")

	// The second approver creates the board, once.
	w.react(w.carol, pv.ID, "✅")
	w.waitFor("approved", w.edit(pv.ID, "Approved by "+string(w.carol.ID)))
	w.checkBoard(10, 13)
	var boards int
	if err := w.env.Store.Pool().QueryRow(context.Background(), "SELECT count(*) FROM boards WHERE channel = $1", key).Scan(&boards); err != nil {
		t.Fatal(err)
	}
	if boards != 1 {
		t.Fatalf("%d boards, want 1", boards)
	}

	status := w.say(bob, "!bobnet status", "", false)
	w.waitFor("model use in the status", func(e *event.Event) bool {
		return w.fromBot(status, "Model use today: ")(e) && strings.Contains(e.Content.AsMessage().FormattedBody, "of 1000000 tokens; resets 00:00 UTC")
	})

	pol := w.say(bob, "!bobnet policy", "", false)
	pm := w.waitFor("policy", w.fromBot(pol, "Approval policy "+key)).Content.AsMessage()
	if !strings.Contains(pm.Body, "2 approval(s) needed") || !strings.Contains(pm.Body, "model budget 1000000 tokens a day") || !strings.Contains(pm.Body, string(bob.ID)) || !strings.Contains(pm.Body, "does not count") {
		t.Fatalf("!bobnet policy: %q", pm.Body)
	}
}

func TestMatrixQuorumApprovalsAtOnce(t *testing.T) {
	w := newWorld(t)
	w.start()
	w.openRoom()
	hs, secret := homeserver(t)
	bob := register(t, hs, secret, "bob-")
	w.join(bob)
	key := "matrix:" + string(w.room)
	if err := w.env.Store.PutPolicy(context.Background(), key, board.Policy{Deciders: []string{"any_member"}, Approvals: 2, SelfApproval: true}, "test"); err != nil {
		t.Fatal(err)
	}
	req := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	pv := w.waitFor("preview", w.preview(req, 1))

	// Three approvals of a 2-approval plan at the same moment: one board.
	var wg sync.WaitGroup
	for _, u := range []*user{w.alice, bob, w.carol} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := u.cli.SendReaction(ctx30(t), w.room, pv.ID, "✅"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	w.waitFor("approved", w.edit(pv.ID, "Approved by "))
	w.waitFor("board link", w.fromBot(req, "created with 10 cards and 13 links"))
	w.checkBoard(10, 13)
	var boards int
	if err := w.env.Store.Pool().QueryRow(context.Background(), "SELECT count(*) FROM boards WHERE channel = $1", key).Scan(&boards); err != nil {
		t.Fatal(err)
	}
	if boards != 1 {
		t.Fatalf("%d boards, want 1", boards)
	}
	if n := w.count(w.fromBot(req, "created with 10 cards")); n != 1 {
		t.Fatalf("the board was announced %d times", n)
	}
	if n := w.count(w.edit(pv.ID, "Approved by ")); n != 1 {
		t.Fatalf("the preview was edited to approved %d times", n)
	}
}

// A decision that comes in while the preview's reactions are still being
// seeded (the engine has no id for the preview yet) edits the preview, and
// only once.
func TestMatrixDecisionDuringSeedingEditsThePreviewOnce(t *testing.T) {
	w := newWorld(t)
	w.start()
	w.openRoom()
	req := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	pv := w.waitFor("preview", w.preview(req, 1)) // seen before its reactions are
	w.react(w.alice, pv.ID, "❌")
	w.waitFor("edited preview", w.edit(pv.ID, "Cancelled by "+string(w.alice.ID)))
	w.env.WaitIdle(t) // the request is acknowledged once its post, and any redraw after it, is done
	if n := w.count(w.edit(pv.ID, "Cancelled by ")); n != 1 {
		t.Fatalf("the preview was edited %d times, want once", n)
	}
}

// With no policy set, a Matrix room's moderators decide besides the
// requester: alice, the room's creator, approves carol's plan.
func TestMatrixModeratorDecidesByDefault(t *testing.T) {
	w := newWorld(t)
	w.start()
	w.openRoom()
	req := w.say(w.carol, "BobNet plan our daily research newspaper", "", true)
	pv := w.waitFor("preview", w.preview(req, 1))
	w.react(w.alice, pv.ID, "✅")
	w.waitFor("approved", w.edit(pv.ID, "Approved by "+string(w.alice.ID)))
	w.checkBoard(10, 13)
}
