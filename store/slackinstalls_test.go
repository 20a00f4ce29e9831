package store_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/secretbox"
	"github.com/bobnet/bobnet/store/storetest"
)

func newBox(t *testing.T, old ...string) (*secretbox.Box, string) {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	key := base64.StdEncoding.EncodeToString(b)
	box, err := secretbox.New(key, old...)
	if err != nil {
		t.Fatal(err)
	}
	return box, key
}

func TestSlackInstallations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.NewStore(t)
	box, oldKey := newBox(t)
	ins := s.SlackInstallations(box)
	exp := time.Now().Add(12 * time.Hour).Truncate(time.Microsecond)
	a := board.SlackInstallation{ID: "T_A", TeamID: "T_A", TeamName: "A", BotUserID: "U_B", AppID: "A1", Scopes: "chat:write",
		InstallerUserID: "U_I", BotToken: "xoxe.xoxb-a", RefreshToken: "xoxe-1-a", TokenExpiresAt: exp}
	if err := ins.Save(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := ins.Save(ctx, board.SlackInstallation{ID: "E_ORG", EnterpriseID: "E_ORG", IsEnterpriseInstall: true, BotToken: "xoxb-org"}); err != nil {
		t.Fatal(err)
	}
	got, err := ins.Installation(ctx, "T_A")
	if err != nil || got.BotToken != a.BotToken || got.RefreshToken != a.RefreshToken || !got.TokenExpiresAt.Equal(exp) || got.Scopes != "chat:write" {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if org, err := ins.Installation(ctx, "E_ORG"); err != nil || !org.IsEnterpriseInstall || org.RefreshToken != "" || !org.TokenExpiresAt.IsZero() {
		t.Fatalf("org install %+v, %v", org, err)
	}
	if _, err := ins.Installation(ctx, "T_NONE"); !errors.Is(err, board.ErrNotInstalled) {
		t.Fatalf("missing installation: %v", err)
	}

	// A ciphertext copied into another row does not open there.
	if _, err := s.Pool().Exec(ctx, `UPDATE slack_installations SET bot_token = (SELECT bot_token FROM slack_installations WHERE installation_id = 'T_A'),
		key_id = (SELECT key_id FROM slack_installations WHERE installation_id = 'T_A') WHERE installation_id = 'E_ORG'`); err != nil {
		t.Fatal(err)
	}
	if _, err := ins.Installation(ctx, "E_ORG"); !errors.Is(err, secretbox.ErrOpen) {
		t.Fatalf("a token moved to another row opened: %v", err)
	}
	// An uninstall from before the installation was made (a retried
	// event of an earlier install) keeps it; one after it deletes it.
	if gone, err := ins.Delete(ctx, "E_ORG", time.Now().Add(-time.Hour)); err != nil || gone {
		t.Fatalf("delete as of an hour ago = %v, %v", gone, err)
	}
	var kept int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM slack_installations WHERE installation_id = 'E_ORG'`).Scan(&kept); err != nil || kept != 1 {
		t.Fatalf("the installation after an older uninstall: %d rows, %v", kept, err)
	}
	if gone, err := ins.Delete(ctx, "E_ORG", time.Now().Add(time.Minute)); err != nil || !gone {
		t.Fatalf("delete as of now = %v, %v", gone, err)
	}

	// Rotation: a box with a new key and the old one reseals the row.
	rotated, _ := newBox(t, oldKey)
	n, err := s.SlackInstallations(rotated).Reseal(ctx)
	if err != nil || n != 1 {
		t.Fatalf("reseal = %d, %v", n, err)
	}
	if n, err := s.SlackInstallations(rotated).Reseal(ctx); err != nil || n != 0 {
		t.Fatalf("second reseal = %d, %v", n, err)
	}
	if _, err := ins.Installation(ctx, "T_A"); !errors.Is(err, secretbox.ErrUnknownKey) {
		t.Fatalf("old box opened a row resealed under the new key: %v", err)
	}
	if got, err := s.SlackInstallations(rotated).Installation(ctx, "T_A"); err != nil || got.BotToken != a.BotToken {
		t.Fatalf("after reseal: %q, %v", got.BotToken, err)
	}

	// Refresh calls refresh only while due says so.
	calls := 0
	due := func(in board.SlackInstallation) bool { return in.BotToken == a.BotToken }
	renew := func(_ context.Context, in board.SlackInstallation) (board.SlackInstallation, error) {
		calls++
		in.BotToken, in.TokenExpiresAt = "xoxe.xoxb-new", time.Now().Add(12*time.Hour)
		return in, nil
	}
	for range 2 {
		if got, err := s.SlackInstallations(rotated).Refresh(ctx, "T_A", due, renew); err != nil || got.BotToken != "xoxe.xoxb-new" {
			t.Fatalf("refresh = %q, %v", got.BotToken, err)
		}
	}
	if calls != 1 {
		t.Fatalf("refresh called %d times", calls)
	}
}
