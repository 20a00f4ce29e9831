package board_test

import (
	"context"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/board/boardtest"
)

func TestRecordDeliveries(t *testing.T) {
	t.Parallel()
	s := boardtest.NewStore(t)
	ctx := context.Background()
	if first, err := s.RecordDeliveries(ctx, []board.Delivery{{Hook: "github", ID: "old", RequestID: "r_old"}}); err != nil || !first[0].IsNew {
		t.Fatalf("first delivery: %v %v", first, err)
	}
	res, err := s.RecordDeliveries(ctx, []board.Delivery{
		{Hook: "github", ID: "d1", RequestID: "r_1"},
		{Hook: "github", ID: "old", RequestID: "r_2"}, // seen before this batch
		{Hook: "github", ID: "d1", RequestID: "r_3"},  // a copy within the batch
		{Hook: "forms", ID: "d1", RequestID: "r_4"},   // same id, other hook
		{Hook: "github", ID: "d2", RequestID: "r_5"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []board.DeliveryResult{{"r_1", true}, {"r_old", false}, {"r_1", false}, {"r_4", true}, {"r_5", true}}
	for i := range want {
		if res[i] != want[i] {
			t.Errorf("result %d = %+v, want %+v", i, res[i], want[i])
		}
	}
	var n int
	_ = s.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries`).Scan(&n)
	if n != 4 {
		t.Fatalf("%d rows, want 4", n)
	}
	if err := s.ForgetDelivery(ctx, "github", "d2"); err != nil {
		t.Fatal(err)
	}
	res, _ = s.RecordDeliveries(ctx, []board.Delivery{{Hook: "github", ID: "d2", RequestID: "r_6"}})
	if res[0] != (board.DeliveryResult{RequestID: "r_6", IsNew: true}) {
		t.Fatalf("after forgetting: %+v", res[0])
	}
}
