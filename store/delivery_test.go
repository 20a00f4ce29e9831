package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

func TestRecordDelivery(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	for _, c := range []struct {
		d    board.Delivery
		want board.DeliveryResult
	}{
		{board.Delivery{Hook: "github", ID: "d1", RequestID: "r_1"}, board.DeliveryResult{RequestID: "r_1", IsNew: true}},
		{board.Delivery{Hook: "github", ID: "d1", RequestID: "r_2"}, board.DeliveryResult{RequestID: "r_1"}}, // redelivered
		{board.Delivery{Hook: "github", ID: "d1", RequestID: "r_1"}, board.DeliveryResult{RequestID: "r_1"}}, // its worker again
		{board.Delivery{Hook: "forms", ID: "d1", RequestID: "r_3"}, board.DeliveryResult{RequestID: "r_3", IsNew: true}},
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
			res[i], errs[i] = s.RecordDelivery(ctx, board.Delivery{Hook: "github", ID: "copy", RequestID: board.RequestID("r_" + string(rune('a'+i)))})
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
