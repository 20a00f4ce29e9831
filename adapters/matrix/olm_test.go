//go:build goolm

package matrix_test

import (
	"context"
	"database/sql"
	"testing"

	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/cryptohelper"

	"github.com/bobnet/bobnet/board"
)

// TestMatrixKeysFromCryptohelperCarryOn: BobNet used to run its
// encryption through mautrix's cryptohelper. A bot whose device and keys
// that made keeps them: the adapter starts on the same device with the
// same identity key (no new keys published, no refusal to start), and
// reads and answers in an encrypted room.
func TestMatrixKeysFromCryptohelperCarryOn(t *testing.T) {
	w := newWorld(t)
	w.encrypt = true
	ctx := context.Background()
	dsn := w.env.Store.Pool().Config().ConnString()

	// What the old code left behind: the bot's session in Postgres and its
	// Olm account in cryptohelper's tables under the bot's user id.
	device := w.bot.cli.DeviceID
	if err := w.env.Store.SaveMatrixSession(ctx, string(w.bot.ID), board.MatrixSession{DeviceID: string(device), AccessToken: w.bot.cli.AccessToken}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	store, err := dbutil.NewWithDB(db, "pgx")
	if err != nil {
		t.Fatal(err)
	}
	old, err := cryptohelper.NewCryptoHelper(w.bot.cli, []byte("test-pickle-key"), store)
	if err != nil {
		t.Fatal(err)
	}
	old.DBAccountID = string(w.bot.ID)
	if err := old.Init(ctx30(t)); err != nil {
		t.Fatal(err)
	}
	identityKey := old.Machine().OwnIdentity().IdentityKey
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	r := w.start()
	if r.ad.DeviceID() != device {
		t.Fatalf("the adapter logged in as device %s, not the saved %s", r.ad.DeviceID(), device)
	}
	resp, err := w.carol.cli.QueryKeys(ctx30(t), &mautrix.ReqQueryKeys{DeviceKeys: mautrix.DeviceKeysRequest{w.bot.ID: {}}})
	if err != nil {
		t.Fatal(err)
	}
	dev, ok := resp.DeviceKeys[w.bot.ID][device]
	if !ok {
		t.Fatalf("the homeserver has no keys for the bot's device %s", device)
	}
	if got := dev.Keys.GetCurve25519(device); got != identityKey {
		t.Fatalf("the device's identity key is %s, the one cryptohelper made is %s", got, identityKey)
	}

	w.openEncryptedRoom(t)
	req := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	pv := w.waitFor("decrypted preview", w.preview(req, 1))
	if !pv.Mautrix.WasEncrypted {
		t.Fatal("the preview in an encrypted room was sent in the clear")
	}
}
