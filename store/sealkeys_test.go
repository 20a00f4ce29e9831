package store_test

import (
	"context"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/secretbox"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestKeyRotationAcrossReplicas walks a rotation with replicas on both
// sides of it, as a rolling deploy has them: one still configured with
// the old key as current (the new one staged among its old keys) writes
// after one with the new key started. Nothing is written, or sealed again,
// under the old key once the new one is in use; the periodic reseal
// catches a row a replica without the new key wrote; a replica with the
// old key among its old keys reseals and starts whatever rows it finds,
// and one without the old key at all then opens every row.
func TestKeyRotationAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	s := store.New(pool, storetest.Logger(t))
	_, oldKey := newBox(t)
	_, newKey := newBox(t)
	box := func(current string, old ...string) *secretbox.Box {
		b, err := secretbox.New(current, old...)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	keyOf := func(id string) string {
		t.Helper()
		var k string
		if err := pool.QueryRow(ctx, `SELECT key_id FROM slack_installations WHERE installation_id = $1`, id).Scan(&k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	oldID, newID := box(oldKey).KeyID(), box(newKey).KeyID()

	// Before the rotation: the old key only.
	before := s.SlackInstallations(box(oldKey))
	if err := before.Save(ctx, board.SlackInstallation{ID: "T_1", BotToken: "xoxb-1"}); err != nil {
		t.Fatal(err)
	}
	// Step 1: the new key staged; nothing changes yet.
	stepOne := s.SlackInstallations(box(oldKey, newKey))
	if n, err := stepOne.Reseal(ctx); err != nil || n != 0 || keyOf("T_1") != oldID {
		t.Fatalf("step 1 reseal = %d, %v; T_1 under %s", n, err, keyOf("T_1"))
	}
	// Step 2 starts on one replica: the new key is in use.
	stepTwo := s.SlackInstallations(box(newKey, oldKey))
	if n, err := stepTwo.Reseal(ctx); err != nil || n != 1 || keyOf("T_1") != newID {
		t.Fatalf("step 2 reseal = %d, %v; T_1 under %s", n, err, keyOf("T_1"))
	}
	// The replica still on step 1 writes under the new key, and its own
	// reseal leaves the rows under the new key (no sealing back).
	if err := stepOne.Save(ctx, board.SlackInstallation{ID: "T_2", BotToken: "xoxb-2"}); err != nil {
		t.Fatal(err)
	}
	if keyOf("T_2") != newID || stepOne.SealKey() != newID {
		t.Fatalf("step-1 replica wrote under %s (sealing under %s), want the new key %s", keyOf("T_2"), stepOne.SealKey(), newID)
	}
	if n, err := stepOne.Reseal(ctx); err != nil || n != 0 || keyOf("T_1") != newID {
		t.Fatalf("step-1 reseal after step 2 = %d, %v; T_1 under %s", n, err, keyOf("T_1"))
	}
	if _, err := stepOne.Refresh(ctx, "T_2", func(board.SlackInstallation) bool { return true },
		func(_ context.Context, in board.SlackInstallation) (board.SlackInstallation, error) {
			in.BotToken = "xoxb-2b"
			return in, nil
		}); err != nil || keyOf("T_2") != newID {
		t.Fatalf("step-1 refresh: %v; T_2 under %s", err, keyOf("T_2"))
	}
	// A replica that never got the new key writes under the old one; the
	// next reseal of a replica with both keys moves the row, and that
	// replica does not refuse anything it can open.
	if err := before.Save(ctx, board.SlackInstallation{ID: "T_3", BotToken: "xoxb-3"}); err != nil || keyOf("T_3") != oldID {
		t.Fatalf("old replica's write: %v, under %s", err, keyOf("T_3"))
	}
	if n, err := stepOne.Reseal(ctx); err != nil || n != 1 || keyOf("T_3") != newID {
		t.Fatalf("sweep of a row under the old key = %d, %v; T_3 under %s", n, err, keyOf("T_3"))
	}
	// Step 3: the old key dropped; every row opens.
	stepThree := s.SlackInstallations(box(newKey))
	if n, err := stepThree.Reseal(ctx); err != nil || n != 0 {
		t.Fatalf("step 3 reseal = %d, %v", n, err)
	}
	for id, want := range map[string]string{"T_1": "xoxb-1", "T_2": "xoxb-2b", "T_3": "xoxb-3"} {
		if in, err := stepThree.Installation(ctx, id); err != nil || in.BotToken != want {
			t.Fatalf("%s after step 3: %q, %v", id, in.BotToken, err)
		}
	}
}
