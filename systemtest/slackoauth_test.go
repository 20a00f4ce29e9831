package systemtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/migrations"
	"github.com/bobnet/bobnet/secretbox"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"

	"github.com/jackc/pgx/v5/pgxpool"
)

func randomKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// TestSlackOAuthServeReseals: serve in multi-workspace mode offers the
// install page, and at start seals again under BOBNET_ENCRYPTION_KEY what
// was sealed under a key now in BOBNET_ENCRYPTION_KEYS_OLD; without the
// old key it refuses to start, naming the variable.
func TestSlackOAuthServeReseals(t *testing.T) {
	t.Parallel()
	bottest.Redis(t)
	db := storetest.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := migrations.Apply(context.Background(), pool, storetest.Logger(t)); err != nil {
		t.Fatal(err)
	}
	oldKey, newKey := randomKey(), randomKey()
	oldBox, _ := secretbox.New(oldKey)
	store := store.New(pool, storetest.Logger(t))
	if err := store.SlackInstallations(oldBox).Save(context.Background(), board.SlackInstallation{ID: "T_A", TeamID: "T_A", BotToken: "xoxb-old-sealed", RefreshToken: "xoxe-1-r"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": db, "SLACK_CLIENT_ID": "1234.5678", "SLACK_CLIENT_SECRET": "cs", "SLACK_SIGNING_SECRET": "ss", "BOBNET_ENCRYPTION_KEY": newKey}

	// The old key forgotten: serve does not start.
	if start(t, withEnv(env), startFails(&err)); err == nil || !strings.Contains(err.Error(), "BOBNET_ENCRYPTION_KEYS_OLD") {
		t.Fatalf("started without the key the installation was sealed with: %v", err)
	}

	env["BOBNET_ENCRYPTION_KEYS_OLD"] = oldKey
	app := start(t, withEnv(env))
	newBox, _ := secretbox.New(newKey)
	in, err := store.SlackInstallations(newBox).Installation(context.Background(), "T_A")
	if err != nil || in.BotToken != "xoxb-old-sealed" || in.RefreshToken != "xoxe-1-r" {
		t.Fatalf("after start, under the new key alone: %q, %v", in.BotToken, err)
	}
	var keyID string
	_ = pool.QueryRow(context.Background(), `SELECT key_id FROM slack_installations`).Scan(&keyID)
	if keyID != newBox.KeyID() {
		t.Fatalf("key id %q, want the new key's %q", keyID, newBox.KeyID())
	}

	resp, err := http.Get(app.URL + "/slack/install")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "client_id=1234.5678") || !strings.Contains(string(page), "Add to Slack") {
		t.Fatalf("install page: %d %s", resp.StatusCode, page)
	}
}
