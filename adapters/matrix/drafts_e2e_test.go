package matrix_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// notices are the bot's notices in thread containing text as first sent:
// no edits.
func (w *world) notices(thread id.EventID, text string) []*event.Event {
	var out []*event.Event
	for _, e := range w.rawEvents() {
		if w.fromBot(thread, text)(e) {
			out = append(out, e)
		}
	}
	return out
}

// edits counts the bot's edits of target.
func (w *world) edits(target id.EventID) int {
	return w.count(w.edit(target, ""))
}

// shown is what a client shows for evt now: the content of its latest
// edit, or its own.
func (w *world) shown(evt id.EventID) *event.MessageEventContent {
	var out *event.MessageEventContent
	for _, e := range w.events() {
		if m, ok := e.Content.Parsed.(*event.MessageEventContent); ok && e.ID == evt {
			out = m
		}
	}
	if out == nil {
		w.t.Fatalf("no event %s", evt)
	}
	return out
}

// gatedRequest is a request alice made in a thread of her own, submitted
// to the engine under an id the test knows (as the adapter would with
// one it drew), whose model call waits until released, so the test can
// draft it first as the engine would while the model writes.
type gatedRequest struct {
	id      board.RequestID
	thread  board.Thread
	root    id.EventID
	asked   chan struct{}
	release chan struct{}
	once    sync.Once
}

// answer lets the model answer.
func (g *gatedRequest) answer() { g.once.Do(func() { close(g.release) }) }

func (w *world) gatedRequest(text string) *gatedRequest {
	t := w.t
	t.Helper()
	g := &gatedRequest{id: bot.NewRequestID(), asked: make(chan struct{}, 1), release: make(chan struct{})}
	// A test that fails before the answer does not leave the model's
	// caller waiting, nor the engine's shutdown behind it.
	t.Cleanup(g.answer)
	newspaper := plannertest.NewspaperPlan(t)
	w.env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply {
		g.asked <- struct{}{}
		<-g.release
		return plannertest.Reply{Content: newspaper}
	})
	// Not addressed to the bot: the adapter leaves it alone, the test
	// submits it.
	g.root = w.say(w.alice, text, "", false)
	g.thread = board.Thread{Channel: board.Channel{Source: board.SourceMatrix, ID: string(w.room)}, ID: string(g.root)}
	if _, err := w.env.Engine.Submit(ctx30(t), board.Request{ID: g.id, Thread: g.thread, User: string(w.alice.ID), Text: text}); err != nil {
		t.Fatal(err)
	}
	<-g.asked
	return g
}

func draftCards(n int) []plan.CardDraft {
	var out []plan.CardDraft
	for i := range n {
		out = append(out, plan.CardDraft{TempID: fmt.Sprint("c", i), Title: fmt.Sprintf("Draft card %d", i+1), Assignee: "Researcher"})
	}
	return out
}

// draftThenPreview drafts g as the engine does while the model writes:
// the notice at the first draft, one edit for two drafts that come within
// a second (the last of them), then the preview the engine posts once the
// model is done, as an edit of the same notice. It returns the notice.
func (w *world) draftThenPreview(ad interface {
	Draft(context.Context, bot.Draft) error
}, g *gatedRequest) *event.Event {
	t := w.t
	t.Helper()
	ctx := ctx30(t)
	if err := ad.Draft(ctx, bot.Draft{Request: g.id, Thread: g.thread}); err != nil {
		t.Fatal(err)
	}
	draft := w.waitFor("drafting notice", w.fromBot(g.root, "Drafting a plan"))
	if !strings.Contains(draft.Content.AsMessage().FormattedBody, "<h4>📝 Drafting a plan…</h4>") {
		t.Fatalf("drafting notice: %q", draft.Content.AsMessage().FormattedBody)
	}
	for _, n := range []int{2, 4} {
		if err := ad.Draft(ctx, bot.Draft{Request: g.id, Thread: g.thread, Title: "Daily Research Newspaper", Cards: draftCards(n)}); err != nil {
			t.Fatal(err)
		}
	}
	w.waitFor("draft edited with 4 cards", w.edit(draft.ID, "4 draft cards so far"))
	if n := w.count(w.edit(draft.ID, "2 draft cards")); n != 0 {
		t.Fatalf("the draft of 2 cards, replaced within the second, was sent %d times", n)
	}
	if m := w.shown(draft.ID); !strings.Contains(m.Body, "4. Draft card 4 — Researcher (draft)") || !strings.Contains(m.FormattedBody, "Drafting: Daily Research Newspaper") {
		t.Fatalf("the draft as shown: %q", m.Body)
	}
	g.answer()
	w.waitFor("draft edited into the preview", w.edit(draft.ID, "React ✅ to approve"))
	return draft
}

// TestMatrixDraftBecomesThePreview: a request's draft is one notice,
// edited as cards come (at most once a second) and then into the preview;
// no other message is left in the thread, and reacting to that notice
// decides the proposal.
func TestMatrixDraftBecomesThePreview(t *testing.T) {
	w := newWorld(t)
	r := w.start()
	w.openRoom()
	g := w.gatedRequest("plan our daily research newspaper")
	draft := w.draftThenPreview(r.ad, g)

	pv := w.waitFor("the preview as shown", w.preview(g.root, 1))
	if pv.ID != draft.ID {
		t.Fatalf("the preview is %s, not the draft's notice %s", pv.ID, draft.ID)
	}
	for _, key := range []string{"✅", "✏️", "❌"} {
		w.waitFor("seeded "+key, func(e *event.Event) bool {
			re, ok := e.Content.Parsed.(*event.ReactionEventContent)
			return ok && e.Sender == w.bot.ID && re.RelatesTo.EventID == draft.ID && re.RelatesTo.Key == key
		})
	}
	if n := len(w.notices(g.root, "")); n != 1 {
		t.Fatalf("%d notices in the thread, want the one draft turned preview", n)
	}
	if m := w.shown(draft.ID); strings.Contains(m.Body, "(draft)") || strings.Contains(m.Body, "Drafting") {
		t.Fatalf("the preview still shows the draft: %q", m.Body)
	}

	w.react(w.alice, draft.ID, "✅")
	w.waitFor("preview edited to approved", w.edit(draft.ID, "Approved by "+string(w.alice.ID)))
	w.waitFor("board link", w.fromBot(g.root, "created with 10 cards and 13 links"))
	w.checkBoard(10, 13)
}

// TestMatrixDraftAnsweredByAnotherReplica: the replica that answers finds
// the draft another drew (Redis) and edits it into the reply; answering
// again edits it again rather than posting, a stale worker's later draft
// draws nothing, and a reply of another request is a notice of its own.
func TestMatrixDraftAnsweredByAnotherReplica(t *testing.T) {
	w := newWorld(t)
	first := w.start()
	second := w.start()
	w.openRoom()
	ctx := ctx30(t)
	root := w.say(w.alice, "plan something vague", "", false)
	thread := board.Thread{Channel: board.Channel{Source: board.SourceMatrix, ID: string(w.room)}, ID: string(root)}
	rid := bot.NewRequestID()
	if err := first.ad.Draft(ctx, bot.Draft{Request: rid, Thread: thread, Cards: draftCards(1)}); err != nil {
		t.Fatal(err)
	}
	draft := w.waitFor("draft", w.fromBot(root, "1 draft card so far"))

	clarify := board.Reply{Kind: board.ReplyClarify, Text: "Which topics should it cover?", Questions: []string{"Science?"}, Request: rid}
	if err := second.ad.Reply(ctx, thread, clarify); err != nil {
		t.Fatal(err)
	}
	w.waitFor("draft edited into the question", w.edit(draft.ID, "Which topics should it cover?"))
	if err := second.ad.Reply(ctx, thread, clarify); err != nil {
		t.Fatal(err)
	}
	if err := first.ad.Draft(ctx, bot.Draft{Request: rid, Thread: thread, Cards: draftCards(3)}); err != nil {
		t.Fatal(err)
	}
	if err := first.ad.Reply(ctx, thread, board.Reply{Kind: board.ReplyInfo, Text: "Another thing, no request"}); err != nil {
		t.Fatal(err)
	}
	w.waitFor("the reply of no request", w.fromBot(root, "Another thing, no request"))
	if n := w.edits(draft.ID); n != 2 {
		t.Fatalf("%d edits of the draft, want the question twice", n)
	}
	if m := w.shown(draft.ID); !strings.Contains(m.Body, "Which topics") || strings.Contains(m.Body, "draft") {
		t.Fatalf("the draft's notice shows %q", m.Body)
	}
	if n := len(w.notices(root, "")); n != 2 {
		t.Fatalf("%d notices in the thread, want the draft turned question and the other reply", n)
	}
}

// TestMatrixRunProgressIsOneNotice: a run's progress is one notice in the
// board's thread, edited as its cards move (two moves within a second are
// one edit, the later), last with the run's end and the edition link;
// another replica edits the same notice.
func TestMatrixRunProgressIsOneNotice(t *testing.T) {
	w := newWorld(t)
	first := w.start()
	second := w.start()
	w.openRoom()
	root := w.say(w.alice, "our board's thread", "", false)
	w.runProgress(first.ad, second.ad, root)
}

// runProgress shows a run of three cards moving in root's thread: first
// from one adapter, the end from another, and checks what alice's client
// sees. It returns the notice.
func (w *world) runProgress(first, second bot.RunShower, root id.EventID) *event.Event {
	t := w.t
	t.Helper()
	ctx := ctx30(t)
	thread := board.Thread{Channel: board.Channel{Source: board.SourceMatrix, ID: string(w.room)}, ID: string(root)}
	run := board.Run{ID: board.NewRunID(), Number: 1, State: board.RunRunning}
	for i, title := range []string{"Define daily topic", "Research", "Write the edition"} {
		run.Cards = append(run.Cards, board.RunCard{Handle: fmt.Sprint("BN-", i+1), Title: title, Status: "Ready"})
	}
	show := func(a bot.RunShower, p bot.RunProgress) {
		t.Helper()
		if err := a.RunProgress(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	progress := func(statuses ...string) bot.RunProgress {
		r := run
		r.Cards = append([]board.RunCard(nil), run.Cards...)
		for i, s := range statuses {
			r.Cards[i].Status = s
		}
		return bot.RunProgress{Thread: thread, BoardTitle: "Daily Research Newspaper", Run: r}
	}
	show(first, progress())
	note := w.waitFor("run progress notice", w.fromBot(root, "Run 1 of Daily Research Newspaper"))
	if b := note.Content.AsMessage().Body; !strings.Contains(b, "0 of 3 cards complete") || strings.Count(b, "· pending") != 3 {
		t.Fatalf("a run just started: %q", b)
	}
	show(first, progress("In Progress"))
	show(first, progress("Done", "In Progress"))
	w.waitFor("progress edited", w.edit(note.ID, "1 of 3 cards complete · 1 in progress"))
	if n := w.count(w.edit(note.ID, "0 of 3 cards complete · 1 in progress")); n != 0 {
		t.Fatalf("a move replaced within the second was sent %d times", n)
	}
	end := progress("Done", "Done", "Done")
	end.Run.State, end.Ended, end.EditionURL = board.RunDone, true, publicURL+"/boards/b_x/runs/1"
	show(second, end)
	w.waitFor("progress at the run's end", w.edit(note.ID, "run done"))
	m := w.shown(note.ID)
	if !strings.Contains(m.Body, "3 of 3 cards complete") || strings.Count(m.Body, "· complete") != 3 ||
		!strings.Contains(m.FormattedBody, `<a href="`+publicURL+`/boards/b_x/runs/1">Read the edition</a>`) {
		t.Fatalf("the run's end as shown: %q\n%q", m.Body, m.FormattedBody)
	}
	if n := len(w.notices(root, "Run 1 of")); n != 1 {
		t.Fatalf("%d run progress notices in the thread, want one", n)
	}
	if n := w.edits(note.ID); n != 2 {
		t.Fatalf("%d edits, want 2: the coalesced move and the end", n)
	}
	return note
}
