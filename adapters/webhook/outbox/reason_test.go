package outbox_test

import (
	"context"
	"testing"

	"github.com/bobnet/bobnet/adapters/webhook/outbox"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/store/storetest"
)

// A cancel's reason travels in its proposal.cancelled callback.
func TestCancelledEventCarriesTheReason(t *testing.T) {
	t.Parallel()
	store := storetest.NewStore(t)
	rc := newReceiver(t)
	o := outbox.New(config(rc.srv.URL), store, storetest.Logger(t))
	run(t, o)
	eng := engineWith(t, store, store, o)
	p := proposeIn(t, eng)
	if _, err := eng.CancelWithReason(context.Background(), p.ID, "alice", "the budget moved"); err != nil {
		t.Fatal(err)
	}
	rc.waitFor(t, "proposal.cancelled", func(got []received, _ []string) bool {
		for _, r := range got {
			if r.Payload.Type == bot.EventProposalCancelled {
				if r.Payload.Data.Reason != "the budget moved" || r.Payload.Data.Actor != "alice" {
					t.Errorf("proposal.cancelled = %+v", r.Payload.Data)
				}
				return true
			}
		}
		return false
	})
}
