package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The headers Slack signs its requests with.
const (
	SlackSignatureHeader = "X-Slack-Signature"
	SlackTimestampHeader = "X-Slack-Request-Timestamp"
)

// SlackHeaders are a Slack request's signature headers, read and
// checked as far as they can be before its body is read: both there, the
// timestamp within Tolerance, the signature of the right form.
type SlackHeaders struct {
	timestamp string
	sig       [sha256.Size]byte
}

// ReadSlackHeaders reads h's signature headers. A request failing it is
// refused without its body being read, so an unsigned or late upload
// costs nothing; one passing it has its body checked by Verify.
func ReadSlackHeaders(h http.Header, now time.Time) (SlackHeaders, error) {
	var s SlackHeaders
	v, ts := h.Get(SlackSignatureHeader), h.Get(SlackTimestampHeader)
	if v == "" || ts == "" {
		return s, fmt.Errorf("%w: send %s and %s", ErrMissing, SlackSignatureHeader, SlackTimestampHeader)
	}
	if err := checkTimestamp(SlackTimestampHeader, ts, now); err != nil {
		return s, err
	}
	got, ok := strings.CutPrefix(v, "v0=")
	if !ok || len(got) != 2*sha256.Size {
		return s, fmt.Errorf("%w: %s must be v0=<64 hex digits>", ErrBadSignature, SlackSignatureHeader)
	}
	if _, err := hex.Decode(s.sig[:], []byte(got)); err != nil {
		return s, fmt.Errorf("%w: %s must be v0=<64 hex digits>", ErrBadSignature, SlackSignatureHeader)
	}
	s.timestamp = ts
	return s, nil
}

// Verify checks the signature the headers carry against body under the
// app's signing secret.
func (s SlackHeaders) Verify(secret string, body []byte) error {
	if !hmac.Equal(s.sig[:], slackMAC(secret, s.timestamp, body)) {
		return ErrBadSignature
	}
	return nil
}

// VerifySlack checks a Slack request's v0 signature of body under the
// app's signing secret, and its timestamp against now.
func VerifySlack(h http.Header, secret string, body []byte, now time.Time) error {
	s, err := ReadSlackHeaders(h, now)
	if err != nil {
		return err
	}
	return s.Verify(secret, body)
}

// SlackSignature is the X-Slack-Signature value of a request, as Slack
// makes it; tests and tools sign what they send with it.
func SlackSignature(secret, timestamp string, body []byte) string {
	return "v0=" + hex.EncodeToString(slackMAC(secret, timestamp, body))
}

func slackMAC(secret, timestamp string, body []byte) []byte {
	return mac([]byte(secret), []byte("v0:"+timestamp+":"), body)
}
