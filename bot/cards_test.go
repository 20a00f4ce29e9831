package bot_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// approvedNewspaper takes the newspaper plan through the engine to an
// approved board in the general channel.
func approvedNewspaper(t *testing.T, env *bottest.Env) board.ID {
	t.Helper()
	answerNewspaper(t, env)
	p := propose(t, env, "alice")
	a, err := env.Engine.Approve(context.Background(), p.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	return a.BoardID
}

// waitReply waits for a reply containing text.
func waitReply(t *testing.T, env *bottest.Env, text string) bottest.PostedReply {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		replies, _, _ := env.Poster.Snapshot()
		for _, r := range replies {
			if strings.Contains(r.Reply.Text, text) {
				return r
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no reply containing %q", text)
	return bottest.PostedReply{}
}

func TestMoveAssignAndNext(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	id := approvedNewspaper(t, env)
	ch := general.Channel

	next, err := env.Engine.NextCards(ctx, ch)
	if err != nil || len(next.Ready) != 1 || next.Ready[0].Handle != "NEWS-1" {
		t.Fatalf("next = %+v, %v", next.Ready, err)
	}
	if !strings.Contains(bot.NextText(next), "NEWS-1 “Define daily topic and source policy”") {
		t.Errorf("next text = %q", bot.NextText(next))
	}

	// A card whose dependency is not Done cannot start, and the refusal
	// names what it waits on.
	_, err = env.Engine.MoveCard(ctx, ch, "bob", "NEWS-2", "in progress")
	var blocked *board.BlockedError
	if !errors.As(err, &blocked) || blocked.Blockers[0].Handle != "NEWS-1" {
		t.Fatalf("early start: %v", err)
	}
	if txt := bot.Explain(err); !strings.Contains(txt, "NEWS-2 can't move to In Progress yet: it waits on NEWS-1") {
		t.Errorf("refusal = %q", txt)
	}

	up, err := env.Engine.MoveCard(ctx, ch, "bob", "define daily", "In Progress")
	if err != nil || up.Card.Status != "In Progress" || up.Card.Handle != "NEWS-1" {
		t.Fatalf("move = %+v, %v", up, err)
	}
	if txt := bot.CardUpdateText(up, "bob"); txt != "NEWS-1 “Define daily topic and source policy” moved from Ready to In Progress by bob." {
		t.Errorf("update text = %q", txt)
	}
	if _, err := env.Engine.AssignCard(ctx, ch, "bob", "NEWS-1", "reviewer"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Engine.AssignCard(ctx, ch, "bob", "NEWS-1", "Astronaut"); !errors.Is(err, bot.ErrUnknownProfile) {
		t.Errorf("unknown profile: %v", err)
	}
	if _, err := env.Engine.MoveCard(ctx, ch, "bob", "Researcher", "Done"); !errors.Is(err, board.ErrAmbiguous) {
		t.Errorf("ambiguous: %v", err)
	}
	if _, err := env.Engine.MoveCard(ctx, ch, "bob", "NEWS-77", "Done"); !errors.Is(err, bot.ErrNotFound) {
		t.Errorf("unknown card: %v", err)
	}
	if _, err := env.Engine.MoveCard(ctx, board.Channel{Source: board.SourceConsole, ID: "empty"}, "bob", "Define daily", "Done"); !errors.Is(err, bot.ErrNotFound) {
		t.Errorf("channel without board: %v", err)
	}
	// A handle is a card of the caller's tenant wherever it is said; in
	// another tenant it is a card nobody has.
	other := board.Channel{Source: board.SourceSlack, ID: "TOTHER/C1"}
	_, errOther := env.Engine.MoveCard(ctx, other, "bob", "NEWS-1", "Done")
	_, errNone := env.Engine.MoveCard(ctx, other, "bob", "ZZZZ-1", "Done")
	if !errors.Is(errOther, bot.ErrNotFound) || bot.Explain(errOther) != bot.Explain(errNone) {
		t.Errorf("another tenant's handle: %v (%q), want as for no card: %q", errOther, bot.Explain(errOther), bot.Explain(errNone))
	}

	// Done is told in the board's thread, with what is ready next.
	if _, err := env.Engine.MoveCard(ctx, ch, "bob", "NEWS-1", "done"); err != nil {
		t.Fatal(err)
	}
	r := waitReply(t, env, "NEWS-1 “Define daily topic and source policy” moved from In Progress to Done by bob.")
	if r.Thread != general || !strings.Contains(r.Reply.Text, "1 of 10 cards Done; ready to start: NEWS-2, NEWS-3, NEWS-4.") || r.Reply.BoardURL == "" {
		t.Errorf("announcement = %+v", r)
	}
	st, err := env.Engine.ChannelStatus(ctx, ch)
	if err != nil || st.Counts["Done"] != 1 || len(st.Ready) != 3 {
		t.Fatalf("status after moves = %+v, %v", st.Counts, err)
	}
	events, _ := env.Store.Audit(ctx, board.AuditFilter{BoardID: id})
	moves := 0
	for _, e := range events {
		if e.Action == "card_changed" {
			moves++
			if e.Actor != "bob" || e.Channel != "console:general" {
				t.Errorf("audit = %+v", e)
			}
		}
	}
	if moves != 3 {
		t.Errorf("%d card_changed audit events, want 3", moves)
	}
}

func TestBoardEventsAreRateLimited(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	approvedNewspaper(t, env)
	ch := general.Channel
	// Eight moves to Blocked within a minute: six are told, the rest
	// only show on the board and in the audit.
	for i := range 16 {
		st := "Blocked"
		if i%2 == 1 {
			st = "Backlog"
		}
		if _, err := env.Engine.MoveCard(ctx, ch, "bob", "NEWS-9", st); err != nil {
			t.Fatal(err)
		}
	}
	told := func() int {
		replies, _, _ := env.Poster.Snapshot()
		n := 0
		for _, r := range replies {
			if strings.Contains(r.Reply.Text, "to Blocked") {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(20 * time.Second)
	for told() < 6 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// The announcements run off the caller's path; give the last two the
	// chance to (wrongly) appear before counting.
	time.Sleep(300 * time.Millisecond)
	if n := told(); n != 6 {
		t.Errorf("%d Blocked announcements for 8 moves to Blocked with a limit of 6 a minute; want 6", n)
	}
}

// v2Plan is the model's answer to "mark the research cards done and add
// a fact-check step".
const v2Plan = `{"kind":"propose_actions","answer":"Research marked done; a fact-check step added before the synthesis.","confidence":0.9,"actions":[
  {"type":"update_card","card":"NEWS-1","status":"Done"},
  {"type":"update_card","card":"NEWS-2","status":"Done"},
  {"type":"update_card","card":"NEWS-3","status":"Done"},
  {"type":"update_card","card":"NEWS-4","status":"Done"},
  {"type":"create_card","cards":[{"temp_id":"fact_check","title":"Fact-check the research","body":"Check every claim against two sources.","assignee":"Reviewer","status":"Ready"}]},
  {"type":"add_links","links":[{"card":"fact_check","depends_on":"NEWS-2"},{"card":"NEWS-5","depends_on":"fact_check"}]}
]}`

func TestUpdateCardProposal(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	id := approvedNewspaper(t, env)
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: v2Plan} })
	rid, err := env.Engine.Submit(ctx, board.Request{Thread: general, User: "alice", Text: "mark the research cards done and add a fact-check step"})
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitRequest(t, rid)
	if st.ProposalID == "" {
		t.Fatalf("request = %+v", st)
	}
	p, err := env.Engine.Proposal(ctx, st.ProposalID)
	if err != nil {
		t.Fatal(err)
	}
	// The preview's diff is against the board as it is.
	var lines []string
	for _, c := range p.BoardChanges {
		lines = append(lines, c.String())
	}
	want := []string{
		"NEWS-1 “Define daily topic and source policy”: status Ready → Done",
		"NEWS-2 “Researcher A: factual and background research”: status Backlog → Done",
		"NEWS-3 “Researcher B: skeptical source validation”: status Backlog → Done",
		"NEWS-4 “Researcher C: visual and image source research”: status Backlog → Done",
		"fact_check “Fact-check the research (new)” will wait on NEWS-2 “Researcher A: factual and background research”",
		"NEWS-5 “Synthesize the edition as editor” will wait on fact_check “Fact-check the research (new)”",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("board changes:\n%s", strings.Join(lines, "\n"))
	}
	// Nothing changes before approval.
	if s, _ := env.Engine.BoardStatus(ctx, id); s.Counts["Done"] != 0 {
		t.Fatalf("changed before approval: %v", s.Counts)
	}
	a, err := env.Engine.Approve(ctx, p.ID, "alice")
	if err != nil || a.BoardID != id {
		t.Fatalf("approve = %+v, %v", a, err)
	}
	if _, err := env.Engine.Approve(ctx, p.ID, "alice"); !errors.Is(err, bot.ErrAlreadyDecided) {
		t.Fatalf("second approve: %v", err)
	}
	s, _ := env.Engine.BoardStatus(ctx, id)
	if s.Counts["Done"] != 4 || s.Counts["Ready"] != 1 || len(s.Ready) != 1 || s.Ready[0].Handle != "NEWS-11" {
		t.Fatalf("after approval: %v, ready %v", s.Counts, s.Ready)
	}
	waitReply(t, env, "Approved by alice at")
	waitReply(t, env, "1 cards added, 4 cards changed, 2 links added (proposal "+string(p.ID))
	events, _ := env.Store.Audit(ctx, board.AuditFilter{BoardID: id})
	changes := 0
	for _, e := range events {
		if e.Action == "card_changed" {
			changes++
		}
	}
	if changes != 4 {
		t.Errorf("%d card changes audited, want 4 (applied once)", changes)
	}
}

func TestProposalWithACycleIsRejected(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	approvedNewspaper(t, env)
	cyclic := `{"kind":"propose_actions","answer":"x","actions":[{"type":"add_links","links":[{"card":"NEWS-1","depends_on":"NEWS-10"}]}]}`
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: cyclic} })
	rid, err := env.Engine.Submit(ctx, board.Request{Thread: general, User: "alice", Text: "make the topic wait on the final review"})
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitRequest(t, rid)
	if st.State != board.RequestFailed || st.ProposalID != "" || st.Reply == nil ||
		!strings.Contains(st.Reply.Text, "actions[0].links: these links would make a dependency cycle with the board's existing links (each depends on the next): NEWS-1 -> NEWS-10 -> NEWS-7 -> NEWS-6 -> NEWS-4 -> NEWS-1") {
		t.Fatalf("request = %+v %+v", st, st.Reply)
	}
}

func TestSplitCardStatus(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]string{
		"NEWS-3 in progress":           {"NEWS-3", "In Progress"},
		"research b done":              {"research b", "Done"},
		"define daily topic Review":    {"define daily topic", "Review"},
		"the in progress card backlog": {"the in progress card", "Backlog"},
	} {
		card, st, ok := bot.SplitCardStatus(strings.Fields(in))
		if !ok || card != want[0] || st != want[1] {
			t.Errorf("%q -> %q %q %v", in, card, st, ok)
		}
	}
	for _, in := range []string{"NEWS-3", "done", "NEWS-3 finished"} {
		if _, _, ok := bot.SplitCardStatus(strings.Fields(in)); ok {
			t.Errorf("%q accepted", in)
		}
	}
}
