package matrix

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"

	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
)

// CrossSigningKeys keeps the bot's cross-signing identity, its seeds
// sealed here, so every start and every replica uses the same one.
type CrossSigningKeys interface {
	AddMatrixCrossSigning(ctx context.Context, user string, cs board.MatrixCrossSigning) error
	MatrixCrossSigning(ctx context.Context, user string) (board.MatrixCrossSigning, error)
}

// ErrSealed is wrapped when sealed keys cannot be opened: a different
// MATRIX_PICKLE_KEY, or a row that was tampered with.
var ErrSealed = errors.New("matrix: sealed keys cannot be opened with this MATRIX_PICKLE_KEY")

// sealVersion leads every sealed value, so the format can change later.
const sealVersion = 1

// sealKey derives the key that seals the cross-signing seeds from the
// pickle key. A key of its own (not the pickle key itself) keeps the two
// uses apart.
func sealKey(pickleKey string) ([]byte, error) {
	return hkdf.Key(sha256.New, []byte(pickleKey), nil, "bobnet matrix cross-signing seeds v1", 32)
}

// seal encrypts secret with AES-256-GCM under a key derived from the
// pickle key; the user id is bound in as associated data, so a row copied
// to another account does not open.
func seal(pickleKey string, user id.UserID, secret []byte) ([]byte, error) {
	aead, err := sealAEAD(pickleKey)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+aead.NonceSize(), 1+aead.NonceSize()+len(secret)+aead.Overhead())
	out[0] = sealVersion
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return aead.Seal(out, out[1:], secret, []byte(user)), nil
}

// unseal opens what seal made.
func unseal(pickleKey string, user id.UserID, sealed []byte) ([]byte, error) {
	aead, err := sealAEAD(pickleKey)
	if err != nil {
		return nil, err
	}
	if len(sealed) < 1+aead.NonceSize() || sealed[0] != sealVersion {
		return nil, fmt.Errorf("%w: unknown format", ErrSealed)
	}
	nonce, box := sealed[1:1+aead.NonceSize()], sealed[1+aead.NonceSize():]
	plain, err := aead.Open(nil, nonce, box, []byte(user))
	if err != nil {
		return nil, ErrSealed
	}
	return plain, nil
}

func sealAEAD(pickleKey string) (cipher.AEAD, error) {
	key, err := sealKey(pickleKey)
	if err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return cipher.NewGCM(block)
}
