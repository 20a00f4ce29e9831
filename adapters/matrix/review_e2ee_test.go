//go:build goolm

package matrix_test

import (
	"context"
	"errors"
	"testing"

	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
)

// TestMatrixEncryptedReviewReaction: in an encrypted room the review
// announcement is encrypted, alice's encrypted ✅ on it is decrypted and
// accepts the card, and the announcement's edit is encrypted too.
func TestMatrixEncryptedReviewReaction(t *testing.T) {
	w := newWorld(t)
	w.encrypt = true
	w.start()
	h := w.openEncryptedRoom(t)
	ctx := context.Background()
	req := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	pv := w.waitFor("preview", w.preview(req, 1))
	w.react(w.alice, pv.ID, "✅")
	w.waitFor("board link", w.fromBot(req, "created with 10 cards"))
	if _, err := w.env.Engine.StartRun(ctx, board.Channel{Source: board.SourceMatrix, ID: string(w.room)}, string(w.alice.ID), ""); err != nil {
		t.Fatal(err)
	}
	job := w.env.WorkForReview(t, "today's topics")
	ann := w.waitFor("review announcement", w.fromBot(req, "is ready for review in run 1"))
	if !ann.Mautrix.WasEncrypted {
		t.Fatal("the announcement in an encrypted room was sent in the clear")
	}
	// Alice's client encrypts her reaction, as Element does (mautrix's
	// SendReaction would send it in the clear).
	reaction := &event.ReactionEventContent{RelatesTo: event.RelatesTo{Type: event.RelAnnotation, EventID: ann.ID, Key: "✅"}}
	enc, err := h.Machine().EncryptMegolmEvent(ctx, w.room, event.EventReaction, reaction)
	if errors.Is(err, crypto.ErrNoGroupSession) {
		// Her session was rotated since her last message (a device list
		// change seen late on a busy machine): share a new one first, as
		// her client does before it sends.
		if err := h.Machine().ShareGroupSession(ctx, w.room, []id.UserID{w.alice.ID, w.bot.ID}); err != nil {
			t.Fatal(err)
		}
		enc, err = h.Machine().EncryptMegolmEvent(ctx, w.room, event.EventReaction, reaction)
	}
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
