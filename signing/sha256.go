package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// The headers that carry a sha256=<hex> signature of the body: BobNet's
// own, and GitHub's.
const (
	BobNetHeader = "X-Bobnet-Signature"
	GitHubHeader = "X-Hub-Signature-256"
)

// SHA256Signature is the sha256=<hex> value of body under secret, as
// GitHub puts it in X-Hub-Signature-256; tests and tools sign what they
// send with it.
func SHA256Signature(secret string, body []byte) string {
	return "sha256=" + hex.EncodeToString(mac([]byte(secret), body))
}

// parseSHA256 reads the HMAC out of a sha256=<hex> value of header.
func parseSHA256(header, value string) ([]byte, error) {
	got, ok := strings.CutPrefix(strings.TrimSpace(value), "sha256=")
	sig, err := hex.DecodeString(got)
	if !ok || err != nil || len(sig) != sha256.Size {
		return nil, fmt.Errorf("%w: %s must be sha256=<64 hex digits>", ErrBadSignature, header)
	}
	return sig, nil
}

// VerifySHA256 checks value, the sha256=<hex> found in header, against
// body under secret. The scheme has no timestamp: replays are the
// receiver's to refuse (the hooks do it by delivery id).
func VerifySHA256(header, value, secret string, body []byte) error {
	sig, err := parseSHA256(header, value)
	if err != nil {
		return err
	}
	if !hmac.Equal(sig, mac([]byte(secret), body)) {
		return ErrBadSignature
	}
	return nil
}
