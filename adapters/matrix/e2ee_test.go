//go:build goolm

package matrix_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/crypto/cryptohelper"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/store/storetest"
)

// withCrypto makes u a client that encrypts and decrypts (keys in a
// Postgres database of its own) and syncs in the background, as Element
// would. Each configure changes the client's Olm machine before it syncs.
func withCrypto(t *testing.T, u *user, configure ...func(*crypto.OlmMachine)) *cryptohelper.CryptoHelper {
	t.Helper()
	db, err := sql.Open("pgx", storetest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	store, err := dbutil.NewWithDB(db, "pgx")
	if err != nil {
		t.Fatal(err)
	}
	h, err := cryptohelper.NewCryptoHelper(u.cli, []byte("alice-pickle"), store)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Init(ctx30(t)); err != nil {
		t.Fatal(err)
	}
	for _, f := range configure {
		f(h.Machine())
	}
	u.cli.Crypto = h
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = u.cli.SyncWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

// openEncryptedRoom gives alice a crypto helper, has the world's reads
// decrypt what she receives, and opens the room encrypted. It returns once
// her client knows the room is encrypted and the bot is in it: before,
// she would send in the clear.
func (w *world) openEncryptedRoom(t *testing.T) *cryptohelper.CryptoHelper {
	t.Helper()
	h := withCrypto(t, w.alice)
	w.decode = func(e *event.Event) *event.Event {
		if e.Type != event.EventEncrypted || e.Content.ParseRaw(e.Type) != nil {
			return e
		}
		if dec, err := h.Decrypt(context.Background(), e); err == nil {
			return dec
		}
		return e
	}
	w.openRoom(event.Event{Type: event.StateEncryption, StateKey: new(string), Content: event.Content{Parsed: &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}}})
	deadline := time.Now().Add(60 * time.Second)
	for {
		enc, _ := w.alice.cli.StateStore.IsEncrypted(context.Background(), w.room)
		if enc && w.alice.cli.StateStore.IsInRoom(context.Background(), w.room, w.bot.ID) {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatal("alice's client never saw the room as encrypted with the bot in it")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestMatrixEncryptedRoom(t *testing.T) {
	w := newWorld(t)
	w.encrypt = true
	first := w.start()
	w.openEncryptedRoom(t)

	req := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	pv := w.waitFor("decrypted threaded preview", w.preview(req, 1))
	if !pv.Mautrix.WasEncrypted {
		t.Fatal("the preview in an encrypted room was sent in the clear")
	}
	if m := pv.Content.AsMessage(); !strings.Contains(m.FormattedBody, "<h4>") {
		t.Fatalf("preview without HTML: %q", m.FormattedBody)
	}
	for _, e := range w.events() {
		if e.ID == req && !e.Mautrix.WasEncrypted {
			t.Fatal("alice's request was not encrypted, so the test proves nothing")
		}
	}

	w.react(w.alice, pv.ID, "✅")
	w.waitFor("encrypted edit to approved", func(e *event.Event) bool {
		return e.Mautrix.WasEncrypted && w.edit(pv.ID, "Approved by "+string(w.alice.ID))(e)
	})
	w.checkBoard(10, 13)

	// A restart keeps the device and its keys: the next encrypted request
	// is read and answered.
	first.stop()
	w.start()
	again := w.say(w.alice, "BobNet plan our daily research newspaper, after a restart", "", true)
	w.waitFor("preview after a restart", func(e *event.Event) bool { return e.Mautrix.WasEncrypted && w.preview(again, 1)(e) })

	// Carol's client sends something nobody can decrypt, twice: the bot
	// says so once.
	garbage := map[string]any{"algorithm": id.AlgorithmMegolmV1, "ciphertext": "AAAA", "session_id": "nope", "sender_key": "nope", "device_id": "NOPE"}
	for range 2 {
		if _, err := w.carol.cli.SendMessageEvent(ctx30(t), w.room, event.EventEncrypted, garbage); err != nil {
			t.Fatal(err)
		}
	}
	cannot := func(e *event.Event) bool {
		return e.Sender == w.bot.ID && strings.Contains(bodyOf(e), "couldn't decrypt a message")
	}
	w.waitFor("cannot-decrypt notice", cannot)
	// Dave joins later: the bot shares its room key with his device too.
	dave := register(t, w.hs, os.Getenv("MATRIX_TEST_SHARED_SECRET"), "dave-")
	dh := withCrypto(t, dave)
	if _, err := w.alice.cli.InviteUser(ctx30(t), w.room, &mautrix.ReqInviteUser{UserID: dave.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := dave.cli.JoinRoomByID(ctx30(t), w.room); err != nil {
		t.Fatal(err)
	}
	w.waitJoined(dave.ID)

	// Something after the garbage that is answered proves the bot got past
	// both; only then is "once" meaningful.
	req2 := w.say(w.alice, "BobNet plan our daily research newspaper, second edition", "", true)
	pv2 := w.waitFor("second preview", w.preview(req2, 1))
	if n := w.count(cannot); n != 1 {
		t.Fatalf("%d cannot-decrypt notices, want 1", n)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		e, err := dave.cli.GetEvent(ctx30(t), w.room, pv2.ID)
		if err == nil && e.Content.ParseRaw(e.Type) == nil {
			e.RoomID = w.room
			if dec, err := dh.Decrypt(context.Background(), e); err == nil && strings.Contains(string(dec.Content.VeryRaw), "Daily Research Newspaper") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("dave, who joined later, cannot decrypt the bot's preview: %v", err)
		}
		time.Sleep(150 * time.Millisecond)
	}
}
