// Package secretbox seals the few secrets BobNet keeps in Postgres (the
// Slack tokens of each workspace it is installed in) with AES-256-GCM, and
// opens them again under the current key or an older one, so the key can
// be rotated without losing what was sealed before.
//
// It is the standard library's crypto/aes and crypto/cipher and nothing
// else, on purpose: sealing a token is a dozen lines of AEAD, Go's
// implementation is constant-time and reviewed with the toolchain, and a
// library (x/crypto's nacl/secretbox, Tink) would be another dependency to
// trust and update for no property BobNet needs.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a key: 32 bytes, AES-256.
const KeySize = 32

// Errors Box returns; check with errors.Is.
var (
	// ErrKey means a key is not the base64 of 32 bytes.
	ErrKey = errors.New("not the base64 of 32 random bytes")
	// ErrUnknownKey means a sealed value names a key id the box does not
	// hold: the key it was sealed with was dropped too early.
	ErrUnknownKey = errors.New("sealed with a key this box does not hold")
	// ErrOpen means a sealed value does not open: altered, truncated, or
	// moved to where its additional data differs.
	ErrOpen = errors.New("sealed value does not open")
)

// key is one AES-256-GCM key and its id.
type key struct {
	id   string
	raw  []byte
	aead cipher.AEAD
}

// Box seals with its current key and opens with the current key or any
// old one it was given. It is safe for concurrent use.
type Box struct {
	current key
	keys    map[string]key
}

// ParseKey reads one key written as standard or URL-safe base64 (padded or
// not) of 32 bytes, as `openssl rand -base64 32` prints it.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeySize {
				return nil, fmt.Errorf("%w (it decodes to %d bytes)", ErrKey, len(b))
			}
			return b, nil
		}
	}
	return nil, ErrKey
}

// New returns a box sealing with current (a base64 key) and opening with
// it and with every key in old.
func New(current string, old ...string) (*Box, error) {
	cur, err := newKey(current)
	if err != nil {
		return nil, err
	}
	b := &Box{current: cur, keys: map[string]key{cur.id: cur}}
	for i, o := range old {
		k, err := newKey(o)
		if err != nil {
			return nil, fmt.Errorf("old key %d: %w", i+1, err)
		}
		if _, dup := b.keys[k.id]; !dup {
			b.keys[k.id] = k
		}
	}
	return b, nil
}

func newKey(s string) (key, error) {
	raw, err := ParseKey(s)
	if err != nil {
		return key{}, err
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return key{}, fmt.Errorf("aes: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return key{}, fmt.Errorf("gcm: %w", err)
	}
	return key{id: KeyID(raw), raw: raw, aead: aead}, nil
}

// KeyID names a key without revealing it: the first 8 hex digits of a
// SHA-256 of it under a label of its own. It is stored beside each sealed
// value, so the value can be opened after the current key changed.
func KeyID(raw []byte) string {
	h := sha256.New()
	h.Write([]byte("bobnet secretbox key id\x00"))
	h.Write(raw)
	return hex.EncodeToString(h.Sum(nil)[:4])
}

// KeyID is the id of the key the box seals with.
func (b *Box) KeyID() string { return b.current.id }

// KeyIDs lists the ids of every key the box holds, the current one first.
func (b *Box) KeyIDs() []string {
	ids := []string{b.current.id}
	for id := range b.keys {
		if id != b.current.id {
			ids = append(ids, id)
		}
	}
	return ids
}

// SealUnder is Seal under the key named keyID, which may be one of the
// old keys: a replica that learned a newer key is in use seals under it.
// ErrUnknownKey when the box does not hold that key.
func (b *Box) SealUnder(keyID string, plain, aad []byte) ([]byte, error) {
	k, ok := b.keys[keyID]
	if !ok {
		return nil, fmt.Errorf("%w: key id %q", ErrUnknownKey, keyID)
	}
	nonce := make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	return k.aead.Seal(nonce, nonce, plain, aad), nil
}

// Seal encrypts plain under the current key, bound to aad (which must be
// given again to open it), and returns nonce||ciphertext and the key's id.
// aad ties a value to where it is stored, so a value copied to another row
// or column does not open there.
func (b *Box) Seal(plain, aad []byte) (sealed []byte, keyID string) {
	nonce := make([]byte, b.current.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	return b.current.aead.Seal(nonce, nonce, plain, aad), b.current.id
}

// Open decrypts a value Seal returned under the key named keyID.
func (b *Box) Open(sealed []byte, keyID string, aad []byte) ([]byte, error) {
	k, ok := b.keys[keyID]
	if !ok {
		return nil, fmt.Errorf("%w: key id %q", ErrUnknownKey, keyID)
	}
	n := k.aead.NonceSize()
	if len(sealed) < n+k.aead.Overhead() {
		return nil, ErrOpen
	}
	plain, err := k.aead.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}

// Derive returns a 32-byte key for another purpose (signing OAuth states),
// made from the current key and label with HMAC-SHA256, so one secret
// setting serves both without the two uses sharing a key.
func (b *Box) Derive(label string) []byte {
	m := hmac.New(sha256.New, b.current.raw)
	m.Write([]byte("bobnet secretbox derive\x00" + label))
	return m.Sum(nil)
}
