package matrix_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/bot"
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

	run, err := w.env.Engine.StartRun(ctx, bot.Channel{Source: bot.SourceMatrix, ID: string(w.room)}, string(w.alice.ID), "")
	if err != nil {
		t.Fatal(err)
	}
	started := w.waitFor("run news", w.fromBot(req, "Run 1 started"))
	// A runner works the first card, as run.Worker does.
	job, ok, err := w.env.Store.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	up, err := w.env.Store.CompleteRunCard(ctx, job, "Planner", "today's topics")
	if err != nil {
		t.Fatal(err)
	}
	w.env.Engine.Reviewing(ctx, job, up)
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

// TestMatrixEncryptedReviewReaction: in an encrypted room the review
// announcement is encrypted, alice's encrypted ✅ on it is decrypted and
// accepts the card, and the announcement's edit is encrypted too.
func TestMatrixEncryptedReviewReaction(t *testing.T) {
	w := newWorld(t)
	w.encrypt = true
	w.start()
	h := withCrypto(t, w.alice)
	w.decode = func(e *event.Event) *event.Event {
		if e.Type != event.EventEncrypted || e.Content.ParseRaw(e.Type) != nil {
			return e
		}
		if dec, err := h.Decrypt(context.Background(), e); err == nil {
			return dec
		}
		return e
	}
	w.openRoom(event.Event{Type: event.StateEncryption, StateKey: new(string), Content: event.Content{Parsed: &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}}})
	deadline := time.Now().Add(60 * time.Second)
	for {
		enc, _ := w.alice.cli.StateStore.IsEncrypted(context.Background(), w.room)
		if enc && w.alice.cli.StateStore.IsInRoom(context.Background(), w.room, w.bot.ID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice's client never saw the room as encrypted with the bot in it")
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx := context.Background()
	req := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	pv := w.waitFor("preview", w.preview(req, 1))
	w.react(w.alice, pv.ID, "✅")
	w.waitFor("board link", w.fromBot(req, "created with 10 cards"))
	if _, err := w.env.Engine.StartRun(ctx, bot.Channel{Source: bot.SourceMatrix, ID: string(w.room)}, string(w.alice.ID), ""); err != nil {
		t.Fatal(err)
	}
	job, ok, err := w.env.Store.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	up, err := w.env.Store.CompleteRunCard(ctx, job, "Planner", "today's topics")
	if err != nil {
		t.Fatal(err)
	}
	w.env.Engine.Reviewing(ctx, job, up)
	ann := w.waitFor("review announcement", w.fromBot(req, "is ready for review in run 1"))
	if !ann.Mautrix.WasEncrypted {
		t.Fatal("the announcement in an encrypted room was sent in the clear")
	}
	// Alice's client encrypts her reaction, as Element does (mautrix's
	// SendReaction would send it in the clear).
	enc, err := h.Machine().EncryptMegolmEvent(ctx, w.room, event.EventReaction,
		&event.ReactionEventContent{RelatesTo: event.RelatesTo{Type: event.RelAnnotation, EventID: ann.ID, Key: "✅"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.alice.cli.SendMessageEvent(ctx, w.room, event.EventEncrypted, enc); err != nil {
		t.Fatal(err)
	}
	w.waitFor("alice's encrypted reaction", func(e *event.Event) bool {
		r, ok := e.Content.Parsed.(*event.ReactionEventContent)
		return ok && e.Sender == w.alice.ID && e.Mautrix.WasEncrypted && r.RelatesTo.EventID == ann.ID
	})
	w.waitFor("encrypted edit to accepted", func(e *event.Event) bool {
		return e.Mautrix.WasEncrypted && w.edit(ann.ID, job.Card.Handle+" was accepted by "+string(w.alice.ID))(e)
	})
}
