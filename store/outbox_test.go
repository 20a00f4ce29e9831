package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestOutboxClaimLeasesTheOldestRowPerEndpoint: a claim takes the oldest
// pending row of each endpoint and leases it, so a second claim takes
// nothing until the lease ends or the row is given back; the next row of
// an endpoint is due only once the one before it is done with.
func TestOutboxClaimLeasesTheOldestRowPerEndpoint(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	evs := []board.OutboundEvent{
		{MsgID: "msg_1", Type: "proposal.created", Endpoints: []string{"https://a.example/", "https://b.example/"}, Body: []byte(`{"n":1}`)},
		{MsgID: "msg_2", Type: "proposal.cancelled", Endpoints: []string{"https://a.example/"}, Body: []byte(`{"n":2}`)},
	}
	if err := s.InsertEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	due, err := s.ClaimEvents(ctx, 32, time.Hour)
	if err != nil || len(due) != 2 || due[0].MsgID != "msg_1" || due[1].MsgID != "msg_1" || due[0].Endpoint == due[1].Endpoint ||
		string(due[0].Body) != `{"n":1}` || due[0].Type != "proposal.created" || due[0].Attempts != 0 || due[0].Disabled {
		t.Fatalf("claim = %+v, %v", due, err)
	}
	if again, err := s.ClaimEvents(ctx, 32, time.Hour); err != nil || len(again) != 0 {
		t.Fatalf("leased rows were claimed again: %+v, %v", again, err)
	}
	a, b := due[0], due[1]
	if a.Endpoint != "https://a.example/" {
		a, b = b, a
	}
	// b's row is given back; a's fails once and is due again at once.
	if err := s.ReleaseEvent(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.RetryEvent(ctx, a.ID, "503", 0); err != nil {
		t.Fatal(err)
	}
	due, err = s.ClaimEvents(ctx, 32, time.Hour)
	if err != nil || len(due) != 2 {
		t.Fatalf("after release and retry: %+v, %v", due, err)
	}
	for _, r := range due {
		switch {
		case r.ID == a.ID && r.Attempts == 1:
		case r.ID == b.ID && r.Attempts == 0:
		default:
			t.Fatalf("claimed %+v", r)
		}
	}
	// a's first row delivered, its second is next; b answers 410 Gone.
	if err := s.MarkEventDelivered(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.FailEvent(ctx, b.ID, "410 Gone"); err != nil {
		t.Fatal(err)
	}
	if err := s.DisableEndpoint(ctx, b.Endpoint, "410 Gone", b.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertEvents(ctx, []board.OutboundEvent{{MsgID: "msg_3", Type: "proposal.created", Endpoints: []string{"https://b.example/"}, Body: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	due, err = s.ClaimEvents(ctx, 32, time.Hour)
	if err != nil || len(due) != 2 {
		t.Fatalf("third claim: %+v, %v", due, err)
	}
	for _, r := range due {
		switch {
		case r.MsgID == "msg_2" && !r.Disabled:
		case r.MsgID == "msg_3" && r.Disabled:
			if err := s.SkipEvent(ctx, r.ID, "disabled"); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("claimed %+v", r)
		}
	}
	if c, err := s.OutboxCounts(ctx); err != nil || c != (board.OutboxCounts{Pending: 1, Delivered: 1, Failed: 2}) {
		t.Fatalf("counts = %+v, %v", c, err)
	}
	// Only rows done with for longer than keep are pruned.
	if n, err := s.PruneEvents(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("prune recent = %d, %v", n, err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE event_outbox SET delivered_at = delivered_at - interval '2 hours', failed_at = failed_at - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneEvents(ctx, time.Hour); err != nil || n != 3 {
		t.Fatalf("prune old = %d, %v", n, err)
	}
	if c, err := s.OutboxCounts(ctx); err != nil || c != (board.OutboxCounts{Pending: 1}) {
		t.Fatalf("counts after prune = %+v, %v", c, err)
	}
}
