package matrix

import (
	"bytes"
	"errors"
	"testing"
)

// TestSealOpensOnlyWithItsKeyAndUser: sealed cross-signing seeds open
// with the pickle key and user they were sealed for, and with nothing
// else; the sealed bytes do not contain the secret.
func TestSealOpensOnlyWithItsKeyAndUser(t *testing.T) {
	secret := []byte(`{"m.cross_signing.master":"c2VjcmV0LXNlZWQtb2YtdGhpcnR5LXR3by1ieXRlcw"}`)
	sealed, err := seal("pickle", "@bot:localhost", secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, secret[10:40]) {
		t.Fatal("the sealed value holds the secret in the clear")
	}
	again, err := seal("pickle", "@bot:localhost", secret)
	if err != nil || bytes.Equal(again, sealed) {
		t.Fatalf("two seals of one secret are equal (nonce reused?): %v", err)
	}
	plain, err := unseal("pickle", "@bot:localhost", sealed)
	if err != nil || !bytes.Equal(plain, secret) {
		t.Fatalf("unseal = %q, %v", plain, err)
	}
	for name, try := range map[string]func() ([]byte, error){
		"another pickle key": func() ([]byte, error) { return unseal("other", "@bot:localhost", sealed) },
		"another user":       func() ([]byte, error) { return unseal("pickle", "@eve:localhost", sealed) },
		"a flipped bit": func() ([]byte, error) {
			bad := bytes.Clone(sealed)
			bad[len(bad)-1] ^= 1
			return unseal("pickle", "@bot:localhost", bad)
		},
		"too short": func() ([]byte, error) { return unseal("pickle", "@bot:localhost", sealed[:5]) },
	} {
		if out, err := try(); !errors.Is(err, ErrSealed) || out != nil {
			t.Errorf("%s: unseal = %q, %v; want ErrSealed", name, out, err)
		}
	}
}
