package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Verification errors; each is answered with 401.
var (
	ErrMissingSignature = errors.New("no signature: send X-Bobnet-Signature, X-Hub-Signature-256 or the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature)")
	ErrStale            = errors.New("webhook-timestamp is more than 5 minutes away from now")
	ErrBadSignature     = errors.New("signature does not match the hook's secret")
)

// Tolerance is how far a Standard Webhooks timestamp may be from now, as
// the specification recommends, so a captured request cannot be replayed
// later.
const Tolerance = 5 * time.Minute

// Scheme is one way a sender signs a delivery.
type Scheme int

// The signature schemes BobNet accepts.
const (
	SchemeNone     Scheme = iota
	SchemeBobNet          // X-Bobnet-Signature: sha256=<hex>
	SchemeGitHub          // X-Hub-Signature-256: sha256=<hex>
	SchemeStandard        // webhook-id, webhook-timestamp, webhook-signature: v1,<base64>
)

// Signed says which scheme a request's headers use, looking only at the
// headers, so an unsigned request is refused before its body is read.
func Signed(h http.Header) Scheme {
	switch {
	case h.Get("webhook-signature") != "" && h.Get("webhook-id") != "" && h.Get("webhook-timestamp") != "":
		return SchemeStandard
	case h.Get("X-Bobnet-Signature") != "":
		return SchemeBobNet
	case h.Get("X-Hub-Signature-256") != "":
		return SchemeGitHub
	}
	return SchemeNone
}

// CheckHeaders refuses, from the headers alone, a delivery whose signature
// headers are missing or ill-formed, or whose Standard Webhooks timestamp
// is outside the tolerance, so that no body is read for it; it returns the
// scheme the headers use. Verify still checks the signature itself.
func CheckHeaders(h http.Header, now time.Time) (Scheme, error) {
	scheme := Signed(h)
	switch scheme {
	case SchemeNone:
		return scheme, ErrMissingSignature
	case SchemeBobNet, SchemeGitHub:
		name := "X-Bobnet-Signature"
		if scheme == SchemeGitHub {
			name = "X-Hub-Signature-256"
		}
		got, ok := strings.CutPrefix(strings.TrimSpace(h.Get(name)), "sha256=")
		if _, err := hex.DecodeString(got); !ok || err != nil || len(got) != 2*sha256.Size {
			return scheme, fmt.Errorf("%w: %s must be sha256=<64 hex digits>", ErrBadSignature, name)
		}
	case SchemeStandard:
		if err := CheckTimestamp(h, now); err != nil {
			return scheme, err
		}
		if !hasV1Signature(h.Get("webhook-signature")) {
			return scheme, fmt.Errorf("%w: webhook-signature has no v1,<base64 HMAC-SHA256>", ErrBadSignature)
		}
	}
	return scheme, nil
}

// hasV1Signature says whether a webhook-signature value holds at least one
// signature BobNet can check: "v1," and the base64 of 32 bytes.
func hasV1Signature(v string) bool {
	for _, sig := range strings.Fields(v) {
		if b64, ok := strings.CutPrefix(sig, "v1,"); ok && base64.StdEncoding.DecodedLen(len(b64)) >= sha256.Size {
			if mac, err := base64.StdEncoding.DecodeString(b64); err == nil && len(mac) == sha256.Size {
				return true
			}
		}
	}
	return false
}

// CheckTimestamp refuses a Standard Webhooks delivery whose timestamp is
// outside the tolerance; it needs only the headers.
func CheckTimestamp(h http.Header, now time.Time) error {
	sec, err := strconv.ParseInt(strings.TrimSpace(h.Get("webhook-timestamp")), 10, 64)
	if err != nil {
		return fmt.Errorf("%w: webhook-timestamp %q is not Unix seconds", ErrBadSignature, h.Get("webhook-timestamp"))
	}
	if d := now.Sub(time.Unix(sec, 0)); d > Tolerance || d < -Tolerance {
		return ErrStale
	}
	return nil
}

// Verify checks body's signature under scheme with secret, comparing in
// constant time. For Standard Webhooks any one of the space-separated
// signatures may match, as senders send several while rotating secrets.
func Verify(scheme Scheme, h http.Header, secret string, body []byte, now time.Time) error {
	switch scheme {
	case SchemeBobNet, SchemeGitHub:
		name := "X-Bobnet-Signature"
		if scheme == SchemeGitHub {
			name = "X-Hub-Signature-256"
		}
		got, ok := strings.CutPrefix(strings.TrimSpace(h.Get(name)), "sha256=")
		if !ok {
			return fmt.Errorf("%w: %s must be sha256=<hex>", ErrBadSignature, name)
		}
		mac, err := hex.DecodeString(got)
		if err != nil || !hmac.Equal(mac, HMAC([]byte(secret), body)) {
			return ErrBadSignature
		}
		return nil
	case SchemeStandard:
		if err := CheckTimestamp(h, now); err != nil {
			return err
		}
		key, err := StandardKey(secret)
		if err != nil {
			return err
		}
		want := StandardSign(key, h.Get("webhook-id"), h.Get("webhook-timestamp"), body)
		for _, sig := range strings.Fields(h.Get("webhook-signature")) {
			b64, ok := strings.CutPrefix(sig, "v1,")
			if !ok {
				continue // another version (v1a is asymmetric): not ours to check
			}
			mac, err := base64.StdEncoding.DecodeString(b64)
			if err == nil && hmac.Equal(mac, want) {
				return nil
			}
		}
		return ErrBadSignature
	}
	return ErrMissingSignature
}

// HMAC is the HMAC-SHA256 of body under key.
func HMAC(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil)
}

// SignatureHeader returns the X-Bobnet-Signature (or X-Hub-Signature-256)
// value of body; tools and tests use it to sign what they send.
func SignatureHeader(secret string, body []byte) string {
	return "sha256=" + hex.EncodeToString(HMAC([]byte(secret), body))
}

// MinKeyBytes is the least key material a hook or callback secret may
// have: a shorter HMAC key can be guessed offline from one signed delivery
// (and an empty one, "whsec_" alone, signs for anyone).
const MinKeyBytes = 16

// ErrShortSecret is a secret with less than MinKeyBytes of key material.
var ErrShortSecret = errors.New("secret too short")

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

// StandardSign is the Standard Webhooks signature of a message: the
// HMAC-SHA256 of "id.timestamp.body".
func StandardSign(key []byte, id, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + timestamp + "."))
	m.Write(body)
	return m.Sum(nil)
}

// StandardHeaders returns the three Standard Webhooks headers for a
// message; the outbox signs with it and tests send with it.
func StandardHeaders(secret, id string, at time.Time, body []byte) (http.Header, error) {
	key, err := StandardKey(secret)
	if err != nil {
		return nil, err
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(StandardSign(key, id, ts, body)))
	return h, nil
}
