package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/bobnet/bobnet/adapters/webhook/outbox"
	"github.com/bobnet/bobnet/adapters/webhook/outbox/outboxtest"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestEveryEventTypeVerifiesWithTheOfficialLibrary: one event of each type
// the engine emits, signed by the sender, is accepted by the
// standardwebhooks npm package's Webhook.verify, including a retry (the
// same webhook-id signed again at a later timestamp).
func TestEveryEventTypeVerifiesWithTheOfficialLibrary(t *testing.T) {
	t.Parallel()
	node := outboxtest.StartNode(t, secret)
	pool := storetest.NewPool(t)
	o := outbox.New(config(node.URL+"/hook"), store.New(pool, storetest.Logger(t)), storetest.Logger(t))
	ctx := context.Background()
	types := []bot.EventType{bot.EventProposalCreated, bot.EventProposalApproved, bot.EventBoardCreated,
		bot.EventProposalCancelled, bot.EventProposalExpired}
	for _, typ := range types {
		if err := o.Emit(ctx, event(typ, "p_1")); err != nil {
			t.Fatal(err)
		}
	}
	up := board.CardUpdate{Card: board.Card{ID: "c_1", Handle: "NEWS-1", Title: "Ünïcode ✓ title", Status: "Done"},
		Board:   board.Board{ID: "b_1", Name: "Daily news", Channel: "console:news"},
		Changes: []board.FieldChange{{Field: "status", From: "In Progress", To: "Done"}}}
	if err := o.Emit(ctx, bot.Event{Type: bot.EventCardChanged, At: time.Now(), Actor: "bob", BoardID: "b_1", Card: &up}); err != nil {
		t.Fatal(err)
	}
	for range len(types) + 1 {
		if _, err := o.SendDue(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A retry of the first event: signed again, later, with the same id.
	if _, err := pool.Exec(ctx, `UPDATE event_outbox SET delivered_at = NULL, next_attempt_at = now() WHERE id = (SELECT min(id) FROM event_outbox)`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // a new webhook-timestamp
	if _, err := o.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := node.WaitFor(len(types)+2, 30*time.Second)
	if err != nil {
		t.Fatalf("%v: %+v", err, got)
	}
	for i, d := range got {
		if !d.OK {
			t.Errorf("the library refused %s (%s): %s", d.ID, d.Type, d.Error)
		}
		if i < len(types) && d.Type != string(types[i]) {
			t.Errorf("delivery %d is %s, want %s", i, d.Type, types[i])
		}
	}
	if last := got[len(got)-1]; last.ID != got[0].ID || got[len(types)].Type != string(bot.EventCardChanged) {
		t.Errorf("the retry was %s, the first %s; card.changed was %s", last.ID, got[0].ID, got[len(types)].Type)
	}
}
