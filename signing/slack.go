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

// CheckSlackHeaders checks what can be checked of a Slack request before
// its body is read: both headers there, the timestamp within Tolerance,
// the signature of the right form. A request failing it is refused
// without its body being read, so an unsigned or late upload costs
// nothing.
func CheckSlackHeaders(h http.Header, now time.Time) error {
	_, _, err := slackHeaders(h, now)
	return err
}

func slackHeaders(h http.Header, now time.Time) (timestamp string, sig []byte, err error) {
	v, ts := h.Get(SlackSignatureHeader), h.Get(SlackTimestampHeader)
	if v == "" || ts == "" {
		return "", nil, fmt.Errorf("%w: send %s and %s", ErrMissing, SlackSignatureHeader, SlackTimestampHeader)
	}
	if err := checkTimestamp(SlackTimestampHeader, ts, now); err != nil {
		return "", nil, err
	}
	got, ok := strings.CutPrefix(v, "v0=")
	if !ok || len(got) != 2*sha256.Size {
		return "", nil, fmt.Errorf("%w: %s must be v0=<64 hex digits>", ErrBadSignature, SlackSignatureHeader)
	}
	sig, err = hex.DecodeString(got)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %s must be v0=<64 hex digits>", ErrBadSignature, SlackSignatureHeader)
	}
	return ts, sig, nil
}

// VerifySlack checks a Slack request's v0 signature of body under the
// app's signing secret, and its timestamp against now.
func VerifySlack(h http.Header, secret string, body []byte, now time.Time) error {
	ts, sig, err := slackHeaders(h, now)
	if err != nil {
		return err
	}
	if !hmac.Equal(sig, slackMAC(secret, ts, body)) {
		return ErrBadSignature
	}
	return nil
}

// SlackSignature is the X-Slack-Signature value of a request, as Slack
// makes it; tests and tools sign what they send with it.
func SlackSignature(secret, timestamp string, body []byte) string {
	return "v0=" + hex.EncodeToString(slackMAC(secret, timestamp, body))
}

func slackMAC(secret, timestamp string, body []byte) []byte {
	return mac([]byte(secret), []byte("v0:"+timestamp+":"), body)
}
