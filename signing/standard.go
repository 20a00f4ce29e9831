package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers.
const (
	StandardIDHeader        = "webhook-id"
	StandardTimestampHeader = "webhook-timestamp"
	StandardSignatureHeader = "webhook-signature"
)

// MinKeyBytes is the least key material a hook or callback secret may
// have: a shorter HMAC key can be guessed offline from one signed
// delivery (and an empty one, "whsec_" alone, signs for anyone).
const MinKeyBytes = 16

// ErrShortSecret is a secret with less than MinKeyBytes of key material.
var ErrShortSecret = errors.New("secret too short")

// StandardKey is the HMAC key of a Standard Webhooks secret: the base64
// after "whsec_", or the secret's own bytes when it has no such prefix.
func StandardKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return []byte(secret), nil
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("secret starts with whsec_ but the rest is not base64: %w", err)
	}
	return key, nil
}

// CheckSecret refuses a secret whose HMAC key (for a whsec_ secret, the
// base64 after the prefix, decoded) is shorter than MinKeyBytes or not
// base64. Its messages never repeat the secret.
func CheckSecret(secret string) error {
	key, err := StandardKey(secret)
	if err != nil {
		return err
	}
	if len(key) < MinKeyBytes {
		what := "the secret"
		if strings.HasPrefix(secret, "whsec_") {
			what = "the base64 after whsec_"
		}
		return fmt.Errorf("%w: %s gives %d bytes of key, at least %d are needed (e.g. whsec_ and the base64 of 32 random bytes: openssl rand -base64 32)",
			ErrShortSecret, what, len(key), MinKeyBytes)
	}
	return nil
}

// StandardHeaders returns the three Standard Webhooks headers of a
// message sent at at; the outbox signs its callbacks with it.
func StandardHeaders(secret, id string, at time.Time, body []byte) (http.Header, error) {
	key, err := StandardKey(secret)
	if err != nil {
		return nil, err
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	h := http.Header{}
	h.Set(StandardIDHeader, id)
	h.Set(StandardTimestampHeader, ts)
	h.Set(StandardSignatureHeader, "v1,"+base64.StdEncoding.EncodeToString(standardMAC(key, id, ts, body)))
	return h, nil
}

// standardSigned says whether all three Standard Webhooks headers are
// there.
func standardSigned(h http.Header) bool {
	return h.Get(StandardSignatureHeader) != "" && h.Get(StandardIDHeader) != "" && h.Get(StandardTimestampHeader) != ""
}

// CheckStandardHeaders refuses, from the headers alone, a Standard
// Webhooks message whose headers are missing, whose timestamp is outside
// Tolerance, or whose webhook-signature holds no v1 signature BobNet can
// check.
func CheckStandardHeaders(h http.Header, now time.Time) error {
	if !standardSigned(h) {
		return fmt.Errorf("%w: send %s, %s and %s", ErrMissing, StandardIDHeader, StandardTimestampHeader, StandardSignatureHeader)
	}
	if err := checkTimestamp(StandardTimestampHeader, h.Get(StandardTimestampHeader), now); err != nil {
		return err
	}
	if len(v1Signatures(h.Get(StandardSignatureHeader))) == 0 {
		return fmt.Errorf("%w: %s has no v1,<base64 HMAC-SHA256>", ErrBadSignature, StandardSignatureHeader)
	}
	return nil
}

// v1Signatures are the well-formed v1 signatures of a webhook-signature
// value; others (v1a is asymmetric) are not ours to check.
func v1Signatures(v string) [][]byte {
	var sigs [][]byte
	for _, s := range strings.Fields(v) {
		b64, ok := strings.CutPrefix(s, "v1,")
		if !ok || base64.StdEncoding.DecodedLen(len(b64)) < sha256.Size {
			continue
		}
		if sig, err := base64.StdEncoding.DecodeString(b64); err == nil && len(sig) == sha256.Size {
			sigs = append(sigs, sig)
		}
	}
	return sigs
}

// VerifyStandard checks a Standard Webhooks message: its headers, its
// timestamp against now, and its signature of body under secret. Any
// one of the space-separated signatures may match, as senders send
// several while rotating secrets.
func VerifyStandard(h http.Header, secret string, body []byte, now time.Time) error {
	if err := CheckStandardHeaders(h, now); err != nil {
		return err
	}
	key, err := StandardKey(secret)
	if err != nil {
		return err
	}
	want := standardMAC(key, h.Get(StandardIDHeader), h.Get(StandardTimestampHeader), body)
	for _, sig := range v1Signatures(h.Get(StandardSignatureHeader)) {
		if hmac.Equal(sig, want) {
			return nil
		}
	}
	return ErrBadSignature
}

// standardMAC is the HMAC-SHA256 of "id.timestamp.body".
func standardMAC(key []byte, id, timestamp string, body []byte) []byte {
	return mac(key, []byte(id+"."+timestamp+"."), body)
}
