package app

import (
	"context"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/migrations"
	"github.com/bobnet/bobnet/secretbox"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestRotationReplicasStartAndConverge: during a rotation, replicas on
// step 1 (old key current, new key staged) and step 2 (new key current,
// old kept) both start whatever rows they find under a key they hold;
// neither seals rows back under the old key; and a row a replica without
// the new key writes after they started is sealed under the new key by
// the periodic reseal, so a replica holding the new key alone (step 3)
// starts.
func TestRotationReplicasStartAndConverge(t *testing.T) {
	t.Parallel()
	bottest.Redis(t)
	ctx := context.Background()
	db := storetest.NewDatabase(t)
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := migrations.Apply(ctx, pool, storetest.Logger(t)); err != nil {
		t.Fatal(err)
	}
	st := store.New(pool, storetest.Logger(t))
	oldKey, newKey := randomKey(), randomKey()
	oldBox, _ := secretbox.New(oldKey)
	newBox, _ := secretbox.New(newKey)
	before := st.SlackInstallations(oldBox)
	save := func(id string) {
		t.Helper()
		if err := before.Save(ctx, board.SlackInstallation{ID: id, TeamID: id, BotToken: "xoxb-" + id}); err != nil {
			t.Fatal(err)
		}
	}
	keyOf := func(id string) string {
		t.Helper()
		var k string
		if err := pool.QueryRow(ctx, `SELECT key_id FROM slack_installations WHERE installation_id = $1`, id).Scan(&k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	start := func(current string, old ...string) {
		t.Helper()
		vars := map[string]string{"DATABASE_URL": db, "REDIS_URL": os.Getenv("REDIS_URL"), "BOBNET_REDIS_PREFIX": bottest.Prefix(),
			"SLACK_CLIENT_ID": "1234.5678", "SLACK_CLIENT_SECRET": "cs", "SLACK_SIGNING_SECRET": "ss", "BOBNET_ENCRYPTION_KEY": current}
		if len(old) > 0 {
			vars["BOBNET_ENCRYPTION_KEYS_OLD"] = old[0]
		}
		cfg, err := LoadConfig(flag.NewFlagSet("t", flag.ContinueOnError), nil, func(k string) string { return vars[k] })
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(ctx, cfg, storetest.Logger(t))
		if err != nil {
			t.Fatalf("a replica with BOBNET_ENCRYPTION_KEY and %d old keys did not start: %v", len(old), err)
		}
		a.Close()
	}

	save("T_A")
	start(oldKey, newKey) // step 1
	if keyOf("T_A") != oldBox.KeyID() {
		t.Fatal("step 1 resealed a row")
	}
	start(newKey, oldKey) // step 2
	if keyOf("T_A") != newBox.KeyID() {
		t.Fatal("step 2 did not reseal under the new key")
	}
	start(oldKey, newKey) // a step-1 replica restarting mid-rollout
	if keyOf("T_A") != newBox.KeyID() {
		t.Fatal("a step-1 replica sealed a row back under the old key")
	}

	// A replica that has not learned of the new key writes under the old
	// one; a step-2 replica's periodic reseal moves the row.
	bothBox, _ := secretbox.New(newKey, oldKey)
	stop := startResealing(ctx, st.SlackInstallations(bothBox), 20*time.Millisecond, storetest.Logger(t))
	defer stop()
	save("T_B")
	deadline := time.Now().Add(5 * time.Second)
	for keyOf("T_B") != newBox.KeyID() {
		if time.Now().After(deadline) {
			t.Fatal("the periodic reseal did not seal T_B under the new key")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	start(newKey) // step 3
	for _, id := range []string{"T_A", "T_B"} {
		if in, err := st.SlackInstallations(newBox).Installation(ctx, id); err != nil || in.BotToken != "xoxb-"+id {
			t.Fatalf("%s under the new key alone: %q, %v", id, in.BotToken, err)
		}
	}
}
