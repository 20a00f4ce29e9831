package slack

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// Slack's published example request (docs: verifying requests from Slack).
const (
	exampleSecret    = "8f742231b10e8888abcd99yyyzzz85a5"
	exampleTimestamp = "1531420618"
	exampleBody      = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	exampleSignature = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

func TestVerifySlackExample(t *testing.T) {
	t.Parallel()
	at := func(sec int64) func() time.Time { return func() time.Time { return time.Unix(sec, 0) } }
	header := func(sig, ts string) http.Header {
		h := http.Header{}
		if sig != "" {
			h.Set("X-Slack-Signature", sig)
		}
		if ts != "" {
			h.Set("X-Slack-Request-Timestamp", ts)
		}
		return h
	}
	tests := []struct {
		name   string
		secret string
		h      http.Header
		body   string
		now    int64
		want   error
	}{
		{"published example", exampleSecret, header(exampleSignature, exampleTimestamp), exampleBody, 1531420618 + 30, nil},
		{"body changed", exampleSecret, header(exampleSignature, exampleTimestamp), exampleBody + "&x=1", 1531420618, ErrBadSignature},
		{"wrong secret", "another-secret", header(exampleSignature, exampleTimestamp), exampleBody, 1531420618, ErrBadSignature},
		{"stale", exampleSecret, header(exampleSignature, exampleTimestamp), exampleBody, 1531420618 + 301, ErrStaleRequest},
		{"from the future", exampleSecret, header(exampleSignature, exampleTimestamp), exampleBody, 1531420618 - 301, ErrStaleRequest},
		{"no signature", exampleSecret, header("", exampleTimestamp), exampleBody, 1531420618, ErrMissingSignature},
		{"no timestamp", exampleSecret, header(exampleSignature, ""), exampleBody, 1531420618, ErrMissingSignature},
		{"not v0", exampleSecret, header("v1=a2114d57", exampleTimestamp), exampleBody, 1531420618, ErrBadSignature},
		{"not hex", exampleSecret, header("v0=zz", exampleTimestamp), exampleBody, 1531420618, ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Verifier{Secret: tt.secret, Now: at(tt.now)}.Verify(tt.h, []byte(tt.body))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if got := SignatureHeader(exampleSecret, exampleTimestamp, []byte(exampleBody)); got != exampleSignature {
		t.Fatalf("SignatureHeader = %s", got)
	}
}
