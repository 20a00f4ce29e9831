package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestUntoldRunEndsAreToldOnce: a run that ended without its thread being
// told (the replica that ended it died) is handed to one caller once its
// retelling is due, again after that if still untold, and never once it
// was told.
func TestUntoldRunEndsAreToldOnce(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	id, _ := newspaperBoard(t, s, "console:told")
	run, err := s.StartRun(ctx, board.RunStart{Board: id, User: "alice", Trigger: "manual", Runners: plan.Runners{}, Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.StopRun(ctx, run.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.UntoldRunEnds(ctx, 10); err != nil || len(got) != 0 {
		t.Fatalf("a run just ended is for its own replica to tell: %v %v", got, err)
	}
	due := func() {
		if _, err := s.Pool().Exec(ctx, `UPDATE runs SET end_tell_after = now() - interval '1 second' WHERE id = $1`, run.ID); err != nil {
			t.Fatal(err)
		}
	}
	due()
	got, err := s.UntoldRunEnds(ctx, 10)
	if err != nil || len(got) != 1 || got[0].ID != run.ID || got[0].State != board.RunStopped {
		t.Fatalf("untold end = %+v, %v", got, err)
	}
	if again, err := s.UntoldRunEnds(ctx, 10); err != nil || len(again) != 0 {
		t.Fatalf("the end was handed out twice: %v %v", again, err)
	}
	if err := s.RunEndTold(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	due()
	if after, err := s.UntoldRunEnds(ctx, 10); err != nil || len(after) != 0 {
		t.Fatalf("a told end is handed out: %v %v", after, err)
	}
}
