package signing_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/bobnet/bobnet/signing"
)

// Slack's published example request (docs: verifying requests from Slack).
const (
	slackSecret    = "8f742231b10e8888abcd99yyyzzz85a5"
	slackTimestamp = "1531420618"
	slackBody      = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	slackSig       = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

// The Standard Webhooks specification's published example.
const (
	swSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	swTS     = "1614265330"
	swSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	swBody   = `{"test": 2432232314}`
)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			h.Set(kv[i], kv[i+1])
		}
	}
	return h
}

func TestSlack(t *testing.T) {
	t.Parallel()
	at := time.Unix(1531420618, 0)
	slack := func(sig, ts string) http.Header {
		return header(signing.SlackSignatureHeader, sig, signing.SlackTimestampHeader, ts)
	}
	tests := []struct {
		name   string
		secret string
		h      http.Header
		body   string
		now    time.Time
		want   error
	}{
		{"published example", slackSecret, slack(slackSig, slackTimestamp), slackBody, at.Add(30 * time.Second), nil},
		{"at the window's far edge", slackSecret, slack(slackSig, slackTimestamp), slackBody, at.Add(signing.Tolerance), nil},
		{"at the window's near edge", slackSecret, slack(slackSig, slackTimestamp), slackBody, at.Add(-signing.Tolerance), nil},
		{"body tampered", slackSecret, slack(slackSig, slackTimestamp), slackBody + "&x=1", at, signing.ErrBadSignature},
		{"wrong secret", "another-secret", slack(slackSig, slackTimestamp), slackBody, at, signing.ErrBadSignature},
		{"timestamp tampered", slackSecret, slack(slackSig, "1531420619"), slackBody, at, signing.ErrBadSignature},
		{"too old", slackSecret, slack(slackSig, slackTimestamp), slackBody, at.Add(signing.Tolerance + time.Second), signing.ErrStale},
		{"from the future", slackSecret, slack(slackSig, slackTimestamp), slackBody, at.Add(-signing.Tolerance - time.Second), signing.ErrStale},
		{"no signature", slackSecret, slack("", slackTimestamp), slackBody, at, signing.ErrMissing},
		{"no timestamp", slackSecret, slack(slackSig, ""), slackBody, at, signing.ErrMissing},
		{"no headers", slackSecret, http.Header{}, slackBody, at, signing.ErrMissing},
		{"timestamp not a number", slackSecret, slack(slackSig, "yesterday"), slackBody, at, signing.ErrBadSignature},
		{"not v0", slackSecret, slack("v1="+slackSig[3:], slackTimestamp), slackBody, at, signing.ErrBadSignature},
		{"not hex", slackSecret, slack("v0="+strings.Repeat("zz", 32), slackTimestamp), slackBody, at, signing.ErrBadSignature},
		{"too short", slackSecret, slack("v0=a2114d57", slackTimestamp), slackBody, at, signing.ErrBadSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := signing.VerifySlack(tc.h, tc.secret, []byte(tc.body), tc.now)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("VerifySlack = %v, want %v", err, tc.want)
			}
			// What the headers alone decide, ReadSlackHeaders decides
			// the same way; the rest Verify decides, as VerifySlack.
			hs, herr := signing.ReadSlackHeaders(tc.h, tc.now)
			if herr == nil {
				herr = hs.Verify(tc.secret, []byte(tc.body))
			}
			if !errors.Is(herr, tc.want) || (tc.want == nil) != (herr == nil) {
				t.Fatalf("ReadSlackHeaders, Verify = %v, want %v", herr, tc.want)
			}
		})
	}
	if got := signing.SlackSignature(slackSecret, slackTimestamp, []byte(slackBody)); got != slackSig {
		t.Fatalf("SlackSignature = %s, want Slack's %s", got, slackSig)
	}
}

func TestSHA256(t *testing.T) {
	t.Parallel()
	const secret = "s3cret"
	body := []byte(`{"text":"plan the launch"}`)
	sig := signing.SHA256Signature(secret, body)
	tests := []struct {
		name   string
		value  string
		secret string
		body   []byte
		want   error
	}{
		// GitHub's published example (docs: validating webhook deliveries).
		{"github's example", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", "It's a Secret to Everybody", []byte("Hello, World!"), nil},
		{"own signature", sig, secret, body, nil},
		{"spaces around", " " + sig + " ", secret, body, nil},
		{"body tampered", sig, secret, []byte(`{"text":"plan the lunch"}`), signing.ErrBadSignature},
		{"wrong secret", signing.SHA256Signature("other", body), secret, body, signing.ErrBadSignature},
		{"no prefix", sig[len("sha256="):], secret, body, signing.ErrBadSignature},
		{"other algorithm", "sha1=" + sig[len("sha256="):], secret, body, signing.ErrBadSignature},
		{"not hex", "sha256=" + strings.Repeat("zz", 32), secret, body, signing.ErrBadSignature},
		{"too short", "sha256=abcd", secret, body, signing.ErrBadSignature},
		{"empty", "", secret, body, signing.ErrBadSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := signing.VerifySHA256(signing.GitHubHeader, tc.value, tc.secret, tc.body)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("VerifySHA256 = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestStandard(t *testing.T) {
	t.Parallel()
	const raw = "a raw secret of enough bytes"
	body := []byte(`{"text":"plan the launch"}`)
	now := time.Unix(1_800_000_000, 0)
	signed := func(secret, id string, at time.Time) http.Header {
		h, err := signing.StandardHeaders(secret, id, at, body)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	with := func(h http.Header, k, v string) http.Header {
		h = h.Clone()
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
		return h
	}
	good := signed(swSecret, "msg_1", now)
	sig := good.Get(signing.StandardSignatureHeader)
	tests := []struct {
		name   string
		h      http.Header
		secret string
		body   []byte
		now    time.Time
		want   error
	}{
		{"published example", header(signing.StandardIDHeader, swID, signing.StandardTimestampHeader, swTS, signing.StandardSignatureHeader, swSig), swSecret, []byte(swBody), time.Unix(1614265330, 0), nil},
		{"whsec secret", good, swSecret, body, now, nil},
		{"raw secret", signed(raw, "msg_1", now), raw, body, now, nil},
		{"4 minutes old", signed(swSecret, "msg_1", now.Add(-4*time.Minute)), swSecret, body, now, nil},
		{"at the window's edges", signed(swSecret, "msg_1", now.Add(-signing.Tolerance)), swSecret, body, now, nil},
		{"6 minutes old", signed(swSecret, "msg_1", now.Add(-6*time.Minute)), swSecret, body, now, signing.ErrStale},
		{"6 minutes ahead", signed(swSecret, "msg_1", now.Add(6*time.Minute)), swSecret, body, now, signing.ErrStale},
		{"body tampered", good, swSecret, []byte(`{"text":"plan the lunch"}`), now, signing.ErrBadSignature},
		{"id tampered", with(good, signing.StandardIDHeader, "msg_2"), swSecret, body, now, signing.ErrBadSignature},
		{"timestamp tampered", with(good, signing.StandardTimestampHeader, fmt.Sprint(now.Unix()+1)), swSecret, body, now, signing.ErrBadSignature},
		{"wrong secret", signed("whsec_b3RoZXIgc2VjcmV0IG9mIDE2K2J5dGVz", "msg_1", now), swSecret, body, now, signing.ErrBadSignature},
		{"rotation: the second of several matches", with(good, signing.StandardSignatureHeader, "v1,bm90IHRoaXMgb25l v1a,xyz v1,"+strings.Repeat("A", 43)+"= "+sig), swSecret, body, now, nil},
		{"rotation: none of several matches", with(good, signing.StandardSignatureHeader, "v1,"+strings.Repeat("A", 43)+"= v1,"+strings.Repeat("B", 43)+"="), swSecret, body, now, signing.ErrBadSignature},
		{"only v1a", with(good, signing.StandardSignatureHeader, "v1a,"+sig[3:]), swSecret, body, now, signing.ErrBadSignature},
		{"v1 not a MAC", with(good, signing.StandardSignatureHeader, "v1,c2hvcnQ="), swSecret, body, now, signing.ErrBadSignature},
		{"timestamp not a number", with(good, signing.StandardTimestampHeader, "soon"), swSecret, body, now, signing.ErrBadSignature},
		{"no id", with(good, signing.StandardIDHeader, ""), swSecret, body, now, signing.ErrMissing},
		{"no timestamp", with(good, signing.StandardTimestampHeader, ""), swSecret, body, now, signing.ErrMissing},
		{"no signature", with(good, signing.StandardSignatureHeader, ""), swSecret, body, now, signing.ErrMissing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := signing.VerifyStandard(tc.h, tc.secret, tc.body, tc.now)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("VerifyStandard = %v, want %v", err, tc.want)
			}
		})
	}
	if err := signing.VerifyStandard(good, "whsec_***", body, now); err == nil || strings.Contains(err.Error(), "***") {
		t.Fatalf("VerifyStandard with a whsec_ secret that is not base64 = %v", err)
	}
	ahead := signed(swSecret, "msg_1", now.Add(signing.Tolerance))
	if err := signing.VerifyStandard(ahead, swSecret, body, now); err != nil {
		t.Fatalf("exactly Tolerance ahead: %v", err)
	}
}

// The hooks' schemes: which one the headers use, and that the headers
// alone refuse what they can.
func TestSchemes(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-of-16-bytes+"
	body := []byte(`{}`)
	now := time.Now()
	std, _ := signing.StandardHeaders(secret, "msg_1", now, body)
	stale, _ := signing.StandardHeaders(secret, "msg_1", now.Add(-time.Hour), body)
	both := std.Clone()
	both.Set(signing.GitHubHeader, signing.SHA256Signature(secret, body))
	tests := []struct {
		name       string
		h          http.Header
		scheme     signing.Scheme
		headersErr error
	}{
		{"bobnet", header(signing.BobNetHeader, signing.SHA256Signature(secret, body)), signing.SchemeBobNet, nil},
		{"github", header(signing.GitHubHeader, signing.SHA256Signature(secret, body)), signing.SchemeGitHub, nil},
		{"standard", std, signing.SchemeStandard, nil},
		{"standard wins over github", both, signing.SchemeStandard, nil},
		{"none", header("X-Github-Delivery", "r-1"), signing.SchemeNone, signing.ErrMissing},
		{"bobnet ill-formed", header(signing.BobNetHeader, "md5=0123"), signing.SchemeBobNet, signing.ErrBadSignature},
		{"standard stale", stale, signing.SchemeStandard, signing.ErrStale},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			scheme, err := signing.CheckHeaders(tc.h, now)
			if scheme != tc.scheme || !errors.Is(err, tc.headersErr) || (tc.headersErr == nil) != (err == nil) {
				t.Fatalf("CheckHeaders = %v, %v; want %v, %v", scheme, err, tc.scheme, tc.headersErr)
			}
			if err != nil {
				return
			}
			if err := signing.Verify(scheme, tc.h, secret, body, now); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if err := signing.Verify(scheme, tc.h, "another secret here", body, now); !errors.Is(err, signing.ErrBadSignature) {
				t.Fatalf("Verify with another secret: %v", err)
			}
		})
	}
	_, err := signing.CheckHeaders(http.Header{}, now)
	for _, name := range []string{signing.BobNetHeader, signing.GitHubHeader, signing.StandardSignatureHeader} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the refusal of an unsigned delivery does not name %s: %v", name, err)
		}
	}
	if err := signing.Verify(signing.SchemeNone, http.Header{}, secret, body, now); !errors.Is(err, signing.ErrMissing) {
		t.Errorf("Verify(SchemeNone) = %v", err)
	}
}

// ErrStale's text is what senders read; it says the window Tolerance is.
func TestStaleSaysTheWindow(t *testing.T) {
	t.Parallel()
	if want := fmt.Sprintf("%d minutes", int(signing.Tolerance/time.Minute)); !strings.Contains(signing.ErrStale.Error(), want) {
		t.Fatalf("ErrStale = %q, Tolerance is %s", signing.ErrStale, signing.Tolerance)
	}
}

func TestCheckSecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		secret string
		want   error
	}{
		{swSecret, nil},
		{"a raw secret of enough bytes", nil},
		{"short", signing.ErrShortSecret},
		{"whsec_", signing.ErrShortSecret},
		{"whsec_c2hvcnQ=", signing.ErrShortSecret},
	}
	for _, tc := range tests {
		if err := signing.CheckSecret(tc.secret); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("CheckSecret(%q) = %v, want %v", tc.secret, err, tc.want)
		}
	}
	err := signing.CheckSecret("whsec_not*base64")
	if err == nil || strings.Contains(err.Error(), "not*base64") {
		t.Fatalf("CheckSecret of a broken whsec_ secret = %v", err)
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReadBody(t *testing.T) {
	t.Parallel()
	const limit = 1 << 10
	tests := []struct {
		name     string
		body     int
		declared bool // Content-Length set, rather than chunked
		want     error
		says     string
	}{
		{"empty", 0, true, nil, ""},
		{"at the limit", limit, true, nil, ""},
		{"at the limit, chunked", limit, false, nil, ""},
		{"declared over the limit", limit + 1, true, signing.ErrTooLarge, "1 KiB"},
		{"over the limit, chunked", 4 * limit, false, signing.ErrTooLarge, "1 KiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &countingReader{r: bytes.NewReader(bytes.Repeat([]byte("a"), tc.body))}
			r := httptest.NewRequest(http.MethodPost, "/", src)
			r.ContentLength = -1
			if tc.declared {
				r.ContentLength = int64(tc.body)
			}
			body, err := signing.ReadBody(httptest.NewRecorder(), r, limit)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("ReadBody = %d bytes, %v; want %v", len(body), err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("ReadBody's error %q does not say %q", err, tc.says)
			}
			if err == nil && len(body) != tc.body {
				t.Fatalf("ReadBody read %d bytes of %d", len(body), tc.body)
			}
			if src.n > limit+1 {
				t.Fatalf("%d bytes were read for a limit of %d", src.n, limit)
			}
			if tc.declared && tc.want != nil && src.n != 0 {
				t.Fatalf("a body declared too large was read (%d bytes)", src.n)
			}
		})
	}
	r := httptest.NewRequest(http.MethodPost, "/", iotest.ErrReader(io.ErrUnexpectedEOF))
	r.ContentLength = -1
	if _, err := signing.ReadBody(httptest.NewRecorder(), r, limit); !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, signing.ErrTooLarge) {
		t.Fatalf("ReadBody of a broken body = %v", err)
	}
	r = httptest.NewRequest(http.MethodPost, "/", strings.NewReader("short"))
	r.ContentLength = 100 // declared longer than what comes
	if body, err := signing.ReadBody(httptest.NewRecorder(), r, limit); !errors.Is(err, io.ErrUnexpectedEOF) || body != nil {
		t.Fatalf("ReadBody of a body cut short of its Content-Length = %q, %v; want io.ErrUnexpectedEOF", body, err)
	}
	if err := signing.CheckLength(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("a", 3<<20))), 2<<20); err == nil || !strings.Contains(err.Error(), "2 MiB") {
		t.Fatalf("CheckLength of 3 MiB against 2 MiB = %v", err)
	}
}
