package webhook

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// The examples below are the ones GitHub and the Standard Webhooks
// specification publish, so the checks agree with real senders rather
// than only with our own signer.
func TestVerifyPublishedExamples(t *testing.T) {
	t.Parallel()
	gh := http.Header{}
	gh.Set("X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
	if err := Verify(Signed(gh), gh, "It's a Secret to Everybody", []byte("Hello, World!"), time.Now()); err != nil {
		t.Errorf("GitHub's example: %v", err)
	}
	sw := http.Header{}
	sw.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	sw.Set("webhook-timestamp", "1614265330")
	sw.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	at := time.Unix(1614265330, 0)
	if err := Verify(Signed(sw), sw, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", []byte(`{"test": 2432232314}`), at); err != nil {
		t.Errorf("Standard Webhooks' example: %v", err)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	const secret = "s3cret"
	const whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"text":"plan the launch"}`)
	now := time.Unix(1_800_000_000, 0)
	std := func(secret string, at time.Time, extra ...string) http.Header {
		h, err := StandardHeaders(secret, "msg_1", at, body)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range extra {
			h.Set("webhook-signature", s+" "+h.Get("webhook-signature"))
		}
		return h
	}
	hdr := func(k, v string) http.Header { h := http.Header{}; h.Set(k, v); return h }
	tests := []struct {
		name   string
		h      http.Header
		secret string
		body   []byte
		want   error
	}{
		{"bobnet", hdr("X-Bobnet-Signature", SignatureHeader(secret, body)), secret, body, nil},
		{"github", hdr("X-Hub-Signature-256", SignatureHeader(secret, body)), secret, body, nil},
		{"bobnet wrong secret", hdr("X-Bobnet-Signature", SignatureHeader("other", body)), secret, body, ErrBadSignature},
		{"bobnet body changed", hdr("X-Bobnet-Signature", SignatureHeader(secret, body)), secret, []byte(`{"text":"plan the lunch"}`), ErrBadSignature},
		{"bobnet no prefix", hdr("X-Bobnet-Signature", SignatureHeader(secret, body)[7:]), secret, body, ErrBadSignature},
		{"bobnet not hex", hdr("X-Bobnet-Signature", "sha256=zz"), secret, body, ErrBadSignature},
		{"standard whsec", std(whsec, now), whsec, body, nil},
		{"standard raw secret", std(secret, now), secret, body, nil},
		{"standard rotation: second signature matches", std(whsec, now, "v1,bm90IHRoaXMgb25l", "v1a,xyz"), whsec, body, nil},
		{"standard 4 minutes old", std(whsec, now.Add(-4*time.Minute)), whsec, body, nil},
		{"standard 6 minutes old", std(whsec, now.Add(-6*time.Minute)), whsec, body, ErrStale},
		{"standard 6 minutes ahead", std(whsec, now.Add(6*time.Minute)), whsec, body, ErrStale},
		{"standard wrong secret", std("whsec_b3RoZXI=", now), whsec, body, ErrBadSignature},
		{"none", http.Header{}, secret, body, ErrMissingSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(Signed(tc.h), tc.h, tc.secret, tc.body, now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestStandardIDTamperFails(t *testing.T) {
	t.Parallel()
	body := []byte(`{}`)
	now := time.Now()
	h, _ := StandardHeaders("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_1", now, body)
	h.Set("webhook-id", "msg_2")
	if err := Verify(SchemeStandard, h, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", body, now); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("a changed webhook-id verified: %v", err)
	}
}
