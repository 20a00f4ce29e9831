package matrix_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/adapters/matrix"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

const newspaperRequest = "BobNet: plan our daily research newspaper @room <script>alert(1)</script>"

// checkBoard asserts the room's board has the newspaper's cards and links.
func (w *world) checkBoard(cards, links int) board.Status {
	t := w.t
	t.Helper()
	st, err := w.env.Engine.ChannelStatus(context.Background(), board.Channel{Source: board.SourceMatrix, ID: string(w.room)})
	if err != nil {
		t.Fatalf("channel status: %v", err)
	}
	_, cs, err := w.env.Store.Board(context.Background(), st.Board.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cs {
		n += len(c.DependsOn)
	}
	if len(cs) != cards || n != links {
		t.Fatalf("board has %d cards and %d links, want %d and %d", len(cs), n, cards, links)
	}
	return st
}

func TestMatrixNewspaperFlow(t *testing.T) {
	w := newWorld(t)
	w.start()
	w.openRoom()

	req := w.say(w.alice, newspaperRequest, "", true)
	pv := w.waitFor("threaded preview", w.preview(req, 1))
	m := pv.Content.AsMessage()
	if m.Format != event.FormatHTML || !strings.Contains(m.FormattedBody, "<h4>") || !strings.Contains(m.FormattedBody, "Daily Research Newspaper") {
		t.Fatalf("preview is not the HTML preview: %q", m.FormattedBody)
	}
	if m.Mentions == nil || len(m.Mentions.UserIDs) != 0 || m.Mentions.Room {
		t.Fatalf("preview pings someone: %+v", m.Mentions)
	}
	for _, key := range []string{"✅", "✏️", "❌"} {
		w.waitFor("seeded "+key, func(e *event.Event) bool {
			r, ok := e.Content.Parsed.(*event.ReactionEventContent)
			return ok && e.Sender == w.bot.ID && r.RelatesTo.EventID == pv.ID && r.RelatesTo.Key == key
		})
	}

	// Carol may not decide: one short notice, no board.
	w.react(w.carol, pv.ID, "✅")
	w.waitFor("refusal notice", w.fromBot(req, string(w.carol.ID)+": Only the person who asked"))
	if _, err := w.env.Engine.ChannelStatus(context.Background(), board.Channel{Source: board.SourceMatrix, ID: string(w.room)}); !errors.Is(err, bot.ErrNotFound) {
		t.Fatalf("a board exists after a refused approval: %v", err)
	}
	w.react(w.carol, pv.ID, "👍")

	// Alice approves.
	w.react(w.alice, pv.ID, "✅")
	w.waitFor("preview edited to approved", w.edit(pv.ID, "Approved by "+string(w.alice.ID)))
	link := w.waitFor("board link in the thread", w.fromBot(req, "created with 10 cards and 13 links"))
	if lm := link.Content.AsMessage(); !strings.Contains(lm.FormattedBody, `<a href="`+publicURL+`/boards/b_`) {
		t.Fatalf("no board link: %q", lm.FormattedBody)
	}
	st := w.checkBoard(10, 13)
	if n := w.count(w.fromBot(req, "Only the person who asked")); n != 1 {
		t.Fatalf("%d refusal notices, want one", n)
	}

	// A second ✅ from alice changes nothing.
	w.say(w.alice, "!approve", req, false)
	w.waitFor("already approved", w.fromBot(req, "already approved"))
	w.checkBoard(10, 13)

	// Status by room.
	status := w.say(w.alice, "!bobnet status", "", false)
	sm := w.waitFor("status", w.fromBot(status, "Daily Research Newspaper")).Content.AsMessage()
	if !strings.Contains(sm.FormattedBody, string(st.Board.ID)) || !strings.Contains(sm.Body, "Backlog 9") || !strings.Contains(sm.Body, "Ready 1") {
		t.Fatalf("status: %q", sm.Body)
	}
	// Status by board id, a bad id and an id of no board.
	byID := w.say(w.carol, "!bobnet status "+string(st.Board.ID), "", false)
	w.waitFor("status by board id", w.fromBot(byID, "Ready to start: Define daily topic"))
	bad := w.say(w.carol, "!bobnet status nonsense", "", false)
	w.waitFor("bad board id", w.fromBot(bad, "not a board id"))
	path := w.say(w.carol, "!bobnet status ../b_"+strings.Repeat("a", 26), "", false)
	w.waitFor("board id with a path", w.fromBot(path, "not a board id"))
	unknown := w.say(w.carol, "!bobnet status b_"+strings.Repeat("a", 26), "", false)
	w.waitFor("unknown board id", w.fromBot(unknown, "There is no board with that id"))
}

func TestMatrixReviseCancelAndThreadReplies(t *testing.T) {
	w := newWorld(t)
	w.start()
	w.openRoom()

	// Mentioned by display name in the body only.
	req := w.say(w.alice, "hey bobnet, plan our daily research newspaper", "", false)
	v1 := w.waitFor("v1", w.preview(req, 1))

	// ✏️ asks for feedback (only of someone who may decide).
	w.react(w.alice, v1.ID, "✏️")
	w.waitFor("feedback question", w.fromBot(req, string(w.alice.ID)+": what should change?"))
	w.say(w.alice, "!revise make it weekly", req, false)
	v2 := w.waitFor("v2", w.preview(req, 2))
	if b := v2.Content.AsMessage().Body; !strings.Contains(b, "Changed since v1") || !strings.Contains(b, "Weekly Research Newspaper") {
		t.Fatalf("v2 does not say what changed: %q", b)
	}
	w.waitFor("v1 superseded", w.edit(v1.ID, "Superseded by v2"))

	// Carol's !cancel is refused; alice's cancels v2.
	w.say(w.carol, "!cancel", req, false)
	w.waitFor("refusal", w.fromBot(req, string(w.carol.ID)+": Only the person who asked"))
	w.say(w.alice, "!cancel", req, false)
	w.waitFor("v2 cancelled", w.edit(v2.ID, "Cancelled by "+string(w.alice.ID)))

	// A plain reply in the bot's thread is a request too.
	w.say(w.alice, "plan our daily research newspaper again", req, false)
	w.waitFor("v1 of the new request", func(e *event.Event) bool {
		return w.preview(req, 1)(e) && e.ID != v1.ID
	})

	// Plain chatter is not.
	w.say(w.carol, "lunch anyone?", "", false)
	help := w.say(w.alice, "!bobnet help", "", false)
	w.waitFor("help", w.fromBot(help, "!bobnet status"))
	if n := len(w.env.Model.Requests()); n != 3 {
		t.Fatalf("the model was asked %d times, want 3 (v1, v2, again)", n)
	}
}

func TestMatrixExpiredProposeAgain(t *testing.T) {
	w := newWorld(t, bottest.WithConfig(func(c *bot.Config) { c.ProposalTTL = 3 * time.Second }))
	w.start()
	w.openRoom()
	req := w.say(w.alice, "!bobnet plan our daily research newspaper", "", false)
	v1 := w.waitFor("preview", w.preview(req, 1))
	w.waitFor("expired", w.edit(v1.ID, "Expired"))
	ev := w.events()
	for _, e := range ev {
		if w.edit(v1.ID, "Expired")(e) && !strings.Contains(e.Content.AsMessage().NewContent.Body, "!again") {
			t.Fatalf("expired preview does not offer to propose again: %q", e.Content.AsMessage().NewContent.Body)
		}
	}
	w.react(w.alice, v1.ID, "✅")
	w.waitFor("expired notice", w.fromBot(req, "Reply !again in this thread"))
	w.say(w.alice, "!again", req, false)
	w.waitFor("proposed again", func(e *event.Event) bool { return w.preview(req, 1)(e) && e.ID != v1.ID })
}

func TestMatrixRefusesInvitesFromOtherServers(t *testing.T) {
	hs, secret := homeserver(t)
	env := bottest.New(t)
	b, alice := register(t, hs, secret, "bobnet-"), register(t, hs, secret, "alice-")
	// Only a made-up server may invite: alice, on the bot's own server, may not.
	ad, err := matrix.New(ctx30(t), matrix.Config{
		Homeserver: hs, UserID: b.ID, AccessToken: b.cli.AccessToken, AllowedServers: []string{"elsewhere.example"}, LeaseTTL: time.Second,
	}, env.Engine, env.Store, nopMemory{}, matrix.NewRedisLease(env.Redis, env.Prefix+":lease", time.Second), storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ad.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; ad.Close() })

	resp, err := alice.cli.CreateRoom(ctx30(t), &mautrix.ReqCreateRoom{Preset: "private_chat", Invite: []id.UserID{b.ID}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var m event.MemberEventContent
		if err := alice.cli.StateEvent(ctx30(t), resp.RoomID, event.StateMember, string(b.ID), &m); err == nil && m.Membership == event.MembershipLeave {
			return // refused
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the bot did not refuse an invite from a server that is not allowed")
}

// nopMemory never remembers.
type nopMemory struct{}

func (nopMemory) SeenOnce(context.Context, string, time.Duration) (bool, error) { return true, nil }
func (nopMemory) ClaimDraftMessage(_ context.Context, _ board.RequestID, ref board.MessageRef) (board.MessageRef, error) {
	return ref, nil
}
func (nopMemory) DraftMessage(context.Context, board.RequestID) (board.MessageRef, string, error) {
	return "", "", nil
}
func (nopMemory) SetDraftAnswer(context.Context, board.RequestID, string) error { return nil }
func (nopMemory) ClaimRunProgressMessage(_ context.Context, _ board.RunID, ref board.MessageRef) (board.MessageRef, error) {
	return ref, nil
}
func (nopMemory) RunProgressMessage(context.Context, board.RunID) (board.MessageRef, error) {
	return "", nil
}

func TestMatrixRestartNeitherRepeatsNorMisses(t *testing.T) {
	w := newWorld(t)
	first := w.start()
	w.openRoom()
	r1 := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	w.waitFor("first preview", w.preview(r1, 1))
	device := first.ad.DeviceID()
	first.stop()

	// Sent while BobNet is down.
	r2 := w.say(w.alice, "BobNet plan our daily research newspaper, second edition", "", true)
	second := w.start()
	if second.ad.DeviceID() != device {
		t.Fatalf("restart logged in as device %s, want the saved %s", second.ad.DeviceID(), device)
	}
	w.waitFor("second preview", w.preview(r2, 1))
	r3 := w.say(w.alice, "BobNet plan our daily research newspaper, third edition", "", true)
	w.waitFor("third preview", w.preview(r3, 1))
	for _, r := range []id.EventID{r1, r2, r3} {
		if n := w.count(w.preview(r, 1)); n != 1 {
			t.Fatalf("request %s answered %d times", r, n)
		}
	}
	if n := len(w.env.Model.Requests()); n != 3 {
		t.Fatalf("the model was asked %d times, want 3", n)
	}
}

func TestMatrixHostileModelTextIsInert(t *testing.T) {
	w := newWorld(t)
	plan, err := json.Marshal(matrix.HostilePlan())
	if err != nil {
		t.Fatal(err)
	}
	w.env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: string(plan)} })
	w.start()
	w.openRoom()
	req := w.say(w.alice, "BobNet plan something", "", true)
	pv := w.waitFor("preview", w.preview(req, 1)).Content.AsMessage()
	matrix.AssertInert(t, pv.FormattedBody, pv.Body, publicURL)
	if !strings.Contains(pv.FormattedBody, "&lt;script&gt;") {
		t.Fatalf("the hostile title is not shown escaped: %s", pv.FormattedBody)
	}
	if pv.Mentions == nil || pv.Mentions.Room || len(pv.Mentions.UserIDs) > 0 {
		t.Fatalf("the preview pings: %+v", pv.Mentions)
	}
}
