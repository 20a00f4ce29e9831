package matrix_test

import (
	"context"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"

	"github.com/bobnet/bobnet/board"
)

// TestMatrixReviewReactions: a run's card reaching Review is announced in
// the board's thread with ✅ and ↩️ seeded; a reaction from someone the
// policy does not let review is refused in the thread, ↩️ asks for the
// reason, a reaction on another message decides nothing, and the run's
// starter's ✅ accepts the card and the announcement is edited to say so.
func TestMatrixReviewReactions(t *testing.T) {
	w := newWorld(t)
	w.start()
	w.openRoom()
	ctx := context.Background()

	req := w.say(w.alice, newspaperRequest, "", true)
	pv := w.waitFor("threaded preview", w.preview(req, 1))
	w.react(w.alice, pv.ID, "✅")
	w.waitFor("board link", w.fromBot(req, "created with 10 cards"))

	run, err := w.env.Engine.StartRun(ctx, board.Channel{Source: board.SourceMatrix, ID: string(w.room)}, string(w.alice.ID), "")
	if err != nil {
		t.Fatal(err)
	}
	started := w.waitFor("run news", w.fromBot(req, "Run 1 started"))
	// A runner works the first card, as run.Worker does.
	job := w.env.WorkForReview(t, "today's topics")
	ann := w.waitFor("review announcement", w.fromBot(req, "is ready for review in run 1"))
	if body := ann.Content.AsMessage().Body; !strings.Contains(body, "react ✅ to accept or ↩️ to send back") {
		t.Errorf("announcement: %q", body)
	}
	for _, key := range []string{"✅", "↩️"} {
		w.waitFor("seeded "+key, func(e *event.Event) bool {
			r, ok := e.Content.Parsed.(*event.ReactionEventContent)
			return ok && e.Sender == w.bot.ID && r.RelatesTo.EventID == ann.ID && r.RelatesTo.Key == key
		})
	}
	status := func() string {
		r, err := w.env.Store.Run(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Cards {
			if c.Card == job.Card.ID {
				return c.Status
			}
		}
		t.Fatal("card not in the run")
		return ""
	}

	// Carol may not review (the built-in policy: the run's starter or an
	// admin); her ✅ on another message is nobody's review.
	w.react(w.carol, ann.ID, "✅")
	w.waitFor("refusal", w.fromBot(req, string(w.carol.ID)+": You can't review this"))
	w.react(w.carol, started.ID, "✅")
	w.react(w.carol, ann.ID, "👍")
	if st := status(); st != "Review" {
		t.Fatalf("refused reactions moved the card to %s", st)
	}

	// ↩️ asks alice for the reason.
	w.react(w.alice, ann.ID, "↩️")
	w.waitFor("prompt for the reason", w.fromBot(req, string(w.alice.ID)+": say why "+job.Card.Handle+" goes back"))

	// Alice accepts.
	w.react(w.alice, ann.ID, "✅")
	w.waitFor("announcement edited", w.edit(ann.ID, job.Card.Handle+" was accepted by "+string(w.alice.ID)))
	w.waitFor("decision in the thread", w.fromBot(req, "accepted by "+string(w.alice.ID)))
	if st := status(); st != "Done" {
		t.Fatalf("accepted card is %s", st)
	}
	if n := w.count(w.fromBot(req, "You can't review this")); n != 1 {
		t.Errorf("%d refusals, want one", n)
	}
}
