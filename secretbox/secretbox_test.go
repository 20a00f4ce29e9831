package secretbox_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/bobnet/bobnet/secretbox"
)

func newKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, secretbox.KeySize)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func TestSealOpen(t *testing.T) {
	box, err := secretbox.New(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte("xoxb-1234-secret")
	sealed, id := box.Seal(plain, []byte("row-1/bot_token"))
	if id != box.KeyID() || bytes.Contains(sealed, plain) {
		t.Fatalf("sealed %x under %q", sealed, id)
	}
	again, _ := box.Seal(plain, []byte("row-1/bot_token"))
	if bytes.Equal(sealed, again) {
		t.Fatal("two seals of one value are equal: the nonce is not fresh")
	}
	got, err := box.Open(sealed, id, []byte("row-1/bot_token"))
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open = %q, %v", got, err)
	}
	if _, err := box.Open(sealed, id, []byte("row-2/bot_token")); !errors.Is(err, secretbox.ErrOpen) {
		t.Fatalf("opened with another row's aad: %v", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := box.Open(sealed, id, []byte("row-1/bot_token")); !errors.Is(err, secretbox.ErrOpen) {
		t.Fatalf("opened an altered value: %v", err)
	}
	if _, err := box.Open(sealed[:5], id, nil); !errors.Is(err, secretbox.ErrOpen) {
		t.Fatalf("opened a truncated value: %v", err)
	}
}

func TestRotation(t *testing.T) {
	oldKey, newK := newKey(t), newKey(t)
	old, _ := secretbox.New(oldKey)
	sealed, id := old.Seal([]byte("token"), nil)

	rotated, err := secretbox.New(newK, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.KeyID() == id {
		t.Fatal("new key has the old key's id")
	}
	if got, err := rotated.Open(sealed, id, nil); err != nil || string(got) != "token" {
		t.Fatalf("open under old key = %q, %v", got, err)
	}
	dropped, _ := secretbox.New(newK)
	if _, err := dropped.Open(sealed, id, nil); !errors.Is(err, secretbox.ErrUnknownKey) {
		t.Fatalf("opened without the old key: %v", err)
	}
	if !bytes.Equal(rotated.Derive("x"), dropped.Derive("x")) || bytes.Equal(rotated.Derive("x"), rotated.Derive("y")) {
		t.Fatal("Derive depends on something besides the current key and label")
	}
}

// TestSealUnderAnOldKey: a box seals under any key it holds (a newer key
// it was given as old, during a rotation), and a box holding that key
// opens it; a key it does not hold is refused.
func TestSealUnderAnOldKey(t *testing.T) {
	oldKey, newK := newKey(t), newKey(t)
	stepOne, _ := secretbox.New(oldKey, newK) // current old, new staged
	stepTwo, _ := secretbox.New(newK, oldKey)
	if ids := stepOne.KeyIDs(); len(ids) != 2 || ids[0] != stepOne.KeyID() || ids[1] != stepTwo.KeyID() {
		t.Fatalf("key ids = %v", ids)
	}
	sealed, err := stepOne.SealUnder(stepTwo.KeyID(), []byte("token"), []byte("aad"))
	if err != nil {
		t.Fatal(err)
	}
	only, _ := secretbox.New(newK)
	if got, err := only.Open(sealed, stepTwo.KeyID(), []byte("aad")); err != nil || string(got) != "token" {
		t.Fatalf("open under the newer key = %q, %v", got, err)
	}
	if _, err := only.SealUnder(stepOne.KeyID(), []byte("token"), nil); !errors.Is(err, secretbox.ErrUnknownKey) {
		t.Fatalf("sealed under a key the box does not hold: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	for _, bad := range []string{"", "short", base64.StdEncoding.EncodeToString(make([]byte, 16)), "!!!!"} {
		if _, err := secretbox.New(bad); !errors.Is(err, secretbox.ErrKey) {
			t.Errorf("New(%q) = %v", bad, err)
		}
	}
	raw := make([]byte, 32)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
		if _, err := secretbox.ParseKey(enc.EncodeToString(raw)); err != nil {
			t.Errorf("ParseKey: %v", err)
		}
	}
}
