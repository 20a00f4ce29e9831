//go:build goolm

package matrix_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/crypto/cryptohelper"
	"maunium.net/go/mautrix/crypto/signatures"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// identity is the bot's cross-signing identity as anyone on the server
// sees it.
type identity struct {
	master, selfSigning id.Ed25519
}

// rawKeys is /keys/query's answer with the signed objects kept as sent,
// so their signatures are checked over exactly what the server holds.
type rawKeys struct {
	DeviceKeys      map[id.UserID]map[id.DeviceID]json.RawMessage `json:"device_keys"`
	MasterKeys      map[id.UserID]json.RawMessage                 `json:"master_keys"`
	SelfSigningKeys map[id.UserID]json.RawMessage                 `json:"self_signing_keys"`
}

// onlyKey returns the one key of a cross-signing key object.
func onlyKey(t *testing.T, raw json.RawMessage, usage string) id.Ed25519 {
	t.Helper()
	var k struct {
		Usage []string              `json:"usage"`
		Keys  map[string]id.Ed25519 `json:"keys"`
	}
	if err := json.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	if len(k.Keys) != 1 || len(k.Usage) != 1 || k.Usage[0] != usage {
		t.Fatalf("%s key: %s", usage, raw)
	}
	for _, v := range k.Keys {
		return v
	}
	return ""
}

// botIdentity asks the homeserver, as carol (who has no crypto of her
// own), for the bot's keys and checks the chain Element checks: the
// device key is signed by the self-signing key, which is signed by the
// master key.
func (w *world) botIdentity(device id.DeviceID) identity {
	t := w.t
	t.Helper()
	var resp rawKeys
	_, err := w.carol.cli.MakeRequest(ctx30(t), http.MethodPost, w.carol.cli.BuildClientURL("v3", "keys", "query"),
		map[string]any{"device_keys": map[id.UserID][]id.DeviceID{w.bot.ID: {}}}, &resp)
	if err != nil {
		t.Fatal(err)
	}
	if resp.MasterKeys[w.bot.ID] == nil || resp.SelfSigningKeys[w.bot.ID] == nil {
		t.Fatalf("the bot has no cross-signing keys on the server (master %s, self-signing %s)",
			resp.MasterKeys[w.bot.ID], resp.SelfSigningKeys[w.bot.ID])
	}
	got := identity{
		master:      onlyKey(t, resp.MasterKeys[w.bot.ID], "master"),
		selfSigning: onlyKey(t, resp.SelfSigningKeys[w.bot.ID], "self_signing"),
	}
	if ok, err := signatures.VerifySignatureJSON(resp.SelfSigningKeys[w.bot.ID], w.bot.ID, got.master.String(), got.master); !ok {
		t.Fatalf("the self-signing key is not signed by the master key: %v", err)
	}
	dev := resp.DeviceKeys[w.bot.ID][device]
	if dev == nil {
		t.Fatalf("the server has no keys for the bot's device %s", device)
	}
	if ok, err := signatures.VerifySignatureJSON(dev, w.bot.ID, got.selfSigning.String(), got.selfSigning); !ok {
		t.Fatalf("the bot's device %s is not signed by its self-signing key: %v", device, err)
	}
	return got
}

// trustOf is how u's Olm machine rates the bot's device.
func trustOf(t *testing.T, h *cryptohelper.CryptoHelper, who id.UserID, device id.DeviceID) id.TrustState {
	t.Helper()
	mach := h.Machine()
	if _, err := mach.FetchKeys(ctx30(t), []id.UserID{who}, true); err != nil {
		t.Fatal(err)
	}
	dev, err := mach.GetOrFetchDevice(ctx30(t), who, device)
	if err != nil {
		t.Fatal(err)
	}
	trust, err := mach.ResolveTrustContext(ctx30(t), dev)
	if err != nil {
		t.Fatal(err)
	}
	return trust
}

// decrypter decodes events with h, leaving what it cannot decrypt as is.
func decrypter(h *cryptohelper.CryptoHelper) func(*event.Event) *event.Event {
	return func(e *event.Event) *event.Event {
		if e.Type != event.EventEncrypted || e.Content.ParseRaw(e.Type) != nil {
			return e
		}
		if dec, err := h.Decrypt(context.Background(), e); err == nil {
			return dec
		}
		return e
	}
}

// waitEncrypted waits until u's client knows the room is encrypted and
// the bot is in it; before that it would send in the clear.
func (w *world) waitEncrypted(u *user) {
	t := w.t
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		enc, _ := u.cli.StateStore.IsEncrypted(context.Background(), w.room)
		if enc && u.cli.StateStore.IsInRoom(context.Background(), w.room, w.bot.ID) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's client never saw the room as encrypted with the bot in it", u.ID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMatrixBotIsCrossSigned is issue 24: the bot sets up cross-signing
// on its first start and signs its own device, so Element shows no red
// shield on its messages, and a client that shares room keys only with
// devices verified by their owner (Element's "exclude insecure devices")
// still gets answered. A restart keeps the same identity, and the
// "couldn't decrypt" notice is sent in the clear so such a client can read
// it.
func TestMatrixBotIsCrossSigned(t *testing.T) {
	w := newWorld(t)
	w.encrypt = true
	first := w.start()
	device := first.ad.DeviceID()
	keys := w.botIdentity(device)

	// Alice's client sends room keys only to cross-signed devices; it
	// withholds them from anything else (m.unverified).
	h := withCrypto(t, w.alice, func(m *crypto.OlmMachine) { m.SendKeysMinTrust = id.TrustStateCrossSignedTOFU })
	if trust := trustOf(t, h, w.bot.ID, device); trust != id.TrustStateCrossSignedTOFU {
		t.Fatalf("alice's client rates the bot's device %s, want %s", trust, id.TrustStateCrossSignedTOFU)
	}
	w.decode = decrypter(h)
	w.openRoom(event.Event{Type: event.StateEncryption, StateKey: new(string), Content: event.Content{Parsed: &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}}})
	w.waitEncrypted(w.alice)

	req := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	pv := w.waitFor("preview of a request shared only with cross-signed devices", w.preview(req, 1))
	if !pv.Mautrix.WasEncrypted {
		t.Fatal("the preview in an encrypted room was sent in the clear")
	}
	for _, e := range w.events() {
		if e.ID == req && !e.Mautrix.WasEncrypted {
			t.Fatal("alice's request was not encrypted, so the test proves nothing")
		}
	}

	// A restart is the same device with the same cross-signing keys: no
	// new identity for people's clients to warn about.
	first.stop()
	second := w.start()
	if second.ad.DeviceID() != device {
		t.Fatalf("device %s after a restart, was %s", second.ad.DeviceID(), device)
	}
	if again := w.botIdentity(device); again != keys {
		t.Fatalf("cross-signing keys changed across a restart: %+v, were %+v", again, keys)
	}
	if trust := trustOf(t, h, w.bot.ID, device); trust != id.TrustStateCrossSignedTOFU {
		t.Fatalf("after a restart alice's client rates the bot's device %s, want %s", trust, id.TrustStateCrossSignedTOFU)
	}
	req2 := w.say(w.alice, "BobNet plan our daily research newspaper, after a restart", "", true)
	w.waitFor("preview after a restart", func(e *event.Event) bool { return e.Mautrix.WasEncrypted && w.preview(req2, 1)(e) })

	// What the bot cannot decrypt it says in the clear: a client that
	// withholds keys from it could not read an encrypted notice either.
	garbage := map[string]any{"algorithm": id.AlgorithmMegolmV1, "ciphertext": "AAAA", "session_id": "nope", "sender_key": "nope", "device_id": "NOPE"}
	if _, err := w.carol.cli.SendMessageEvent(ctx30(t), w.room, event.EventEncrypted, garbage); err != nil {
		t.Fatal(err)
	}
	notice := w.waitFor("cannot-decrypt notice", func(e *event.Event) bool {
		return e.Sender == w.bot.ID && strings.Contains(bodyOf(e), "couldn't decrypt a message")
	})
	if notice.Mautrix.WasEncrypted || notice.Type != event.EventMessage {
		t.Fatalf("the cannot-decrypt notice was encrypted (%s)", notice.Type.Type)
	}
}

// TestMatrixBotLeavesForeignCrossSigningAlone: when the bot account
// already has cross-signing keys that BobNet did not make (someone set
// them up in Element logged in as the bot), BobNet neither replaces them
// (which would reset the identity people trust; its password would let
// it) nor saves keys of its own, and still starts and answers.
func TestMatrixBotLeavesForeignCrossSigningAlone(t *testing.T) {
	w := newWorld(t)
	w.encrypt = true
	other := withCrypto(t, w.bot).Machine()
	keys, err := other.GenerateCrossSigningKeys()
	if err != nil {
		t.Fatal(err)
	}
	if err := other.PublishCrossSigningKeys(ctx30(t), keys, nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := w.start()
		var resp rawKeys
		_, err := w.carol.cli.MakeRequest(ctx30(t), http.MethodPost, w.carol.cli.BuildClientURL("v3", "keys", "query"),
			map[string]any{"device_keys": map[id.UserID][]id.DeviceID{w.bot.ID: {}}}, &resp)
		if err != nil {
			t.Fatal(err)
		}
		if got := onlyKey(t, resp.MasterKeys[w.bot.ID], "master"); got != keys.MasterKey.PublicKey() {
			t.Fatalf("BobNet replaced the account's master key %s with %s", keys.MasterKey.PublicKey(), got)
		}
		if _, err := w.env.Store.MatrixCrossSigning(ctx30(t), string(w.bot.ID)); !errors.Is(err, board.ErrNotFound) {
			t.Fatalf("BobNet saved cross-signing keys it cannot publish: %v", err)
		}
		r.stop()
	}
	w.start()
	w.openRoom()
	req := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	w.waitFor("preview", w.preview(req, 1))
}
