package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

func TestRecordDelivery(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	t1 := time.Date(2026, 12, 6, 9, 0, 0, 123456789, time.UTC)
	t2 := t1.Add(30 * time.Second)
	for _, c := range []struct {
		d    board.Delivery
		want board.DeliveryResult
	}{
		{board.Delivery{Hook: "github", ID: "d1", RequestID: "r_1", ReceivedAt: t1}, board.DeliveryResult{RequestID: "r_1", IsNew: true, Own: true}},
		{board.Delivery{Hook: "github", ID: "d1", RequestID: "r_2", ReceivedAt: t2}, board.DeliveryResult{RequestID: "r_1"}}, // redelivered
		// Its worker again, after a crash: the record's time read back
		// from Redis at nanoseconds, Postgres's at microseconds.
		{board.Delivery{Hook: "github", ID: "d1", RequestID: "r_1", ReceivedAt: t1}, board.DeliveryResult{RequestID: "r_1", Own: true}},
		// Redelivered once Redis forgot the first: the same derived id,
		// another request.
		{board.Delivery{Hook: "github", ID: "d1", RequestID: "r_1", ReceivedAt: t2}, board.DeliveryResult{RequestID: "r_1"}},
		{board.Delivery{Hook: "forms", ID: "d1", RequestID: "r_3", ReceivedAt: t1}, board.DeliveryResult{RequestID: "r_3", IsNew: true, Own: true}},
	} {
		got, err := s.RecordDelivery(ctx, c.d)
		if err != nil || got != c.want {
			t.Errorf("RecordDelivery(%+v) = %+v, %v; want %+v", c.d, got, err, c.want)
		}
	}
	var n int
	_ = s.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries`).Scan(&n)
	if n != 2 {
		t.Fatalf("%d rows, want 2", n)
	}
	// A row of before migration 0025 has no time: its request (a random
	// id) is the only one with its id.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO webhook_deliveries (hook, delivery_id, request_id) VALUES ('github', 'old', 'r_old')`); err != nil {
		t.Fatal(err)
	}
	if got, err := s.RecordDelivery(ctx, board.Delivery{Hook: "github", ID: "old", RequestID: "r_old", ReceivedAt: t2}); err != nil || !got.Own || got.IsNew {
		t.Errorf("the request of a row without a time = %+v, %v; want its own", got, err)
	}
	if got, err := s.RecordDelivery(ctx, board.Delivery{Hook: "github", ID: "old", RequestID: "r_new", ReceivedAt: t2}); err != nil || got.Own || got.RequestID != "r_old" {
		t.Errorf("a redelivery of a row without a time = %+v, %v; want r_old's, not its own", got, err)
	}
}

// Concurrent copies of one delivery: one is new, and every copy learns
// its request id, including copies whose insert waited on the first.
func TestRecordDeliveryConcurrentCopies(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	res := make([]board.DeliveryResult, 20)
	errs := make([]error, 20)
	for i := range res {
		wg.Go(func() {
			res[i], errs[i] = s.RecordDelivery(ctx, board.Delivery{Hook: "github", ID: "copy", RequestID: board.RequestID("r_" + string(rune('a'+i))), ReceivedAt: time.Now()})
		})
	}
	wg.Wait()
	news := 0
	for i := range res {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if res[i].IsNew {
			news++
		}
		if res[i].RequestID != res[0].RequestID {
			t.Fatalf("copy %d answered %s, copy 0 %s", i, res[i].RequestID, res[0].RequestID)
		}
	}
	if news != 1 {
		t.Fatalf("%d copies were new, want 1", news)
	}
}
