// Package signing checks and makes the HMAC signatures BobNet's HTTP
// carries: Slack's v0 request signatures, the sha256=<hex> of BobNet's
// own hooks and of GitHub, and Standard Webhooks, inbound and outbound.
// Every timestamped scheme is judged by the one window Tolerance, every
// comparison is constant-time, and every signed body is read through
// ReadBody, which never reads past its limit.
package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far a signed timestamp may be from now, either way:
// five minutes, as both Slack and the Standard Webhooks specification
// say, so a captured request cannot be replayed later.
const Tolerance = 5 * time.Minute

// Errors of checking a request; check with errors.Is. Their text is safe
// to send back to the sender: it never repeats a secret.
var (
	// ErrMissing means the signature headers are not there.
	ErrMissing = errors.New("no signature")
	// ErrStale means the signed timestamp is outside Tolerance.
	ErrStale = errors.New("timestamp is more than 5 minutes away from now")
	// ErrBadSignature means a signature header is ill-formed or its
	// signature does not match the body under the secret.
	ErrBadSignature = errors.New("signature does not match")
	// ErrTooLarge means a body is (or says it is) over its limit.
	ErrTooLarge = errors.New("body is too large")
)

// CheckLength refuses a request whose declared Content-Length is over
// limit, before anything of its body is read (or a read slot is taken
// for it).
func CheckLength(r *http.Request, limit int64) error {
	if r.ContentLength > limit {
		return tooLarge(limit)
	}
	return nil
}

// ReadBody reads r's body, never more than limit bytes: a body declared
// or found to be longer is an error wrapping ErrTooLarge that names the
// limit, and the connection is closed after the answer (as
// http.MaxBytesReader does), so an unsigned body costs at most limit.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if err := CheckLength(r, limit); err != nil {
		return nil, err
	}
	if n := r.ContentLength; n > 0 && n <= limit {
		// The server hands over exactly Content-Length bytes: read them
		// into one buffer of that size instead of growing one.
		body := make([]byte, n)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, fmt.Errorf("reading the body: %w", err)
		}
		return body, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, tooLarge(limit)
	case err != nil:
		return nil, fmt.Errorf("reading the body: %w", err)
	}
	return body, nil
}

func tooLarge(limit int64) error {
	return fmt.Errorf("%w: at most %s", ErrTooLarge, sizeText(limit))
}

// sizeText says a byte count as people read it: 1 MiB, 16 KiB, 300 bytes.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// checkTimestamp refuses a timestamp header (Unix seconds) outside
// Tolerance of now; the one window every scheme shares.
func checkTimestamp(header, value string, now time.Time) error {
	sec, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s %q is not Unix seconds", ErrBadSignature, header, value)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > Tolerance || d < -Tolerance {
		return fmt.Errorf("%s: %w", header, ErrStale)
	}
	return nil
}

// mac is the HMAC-SHA256 under key of the parts, written in order.
func mac(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}
