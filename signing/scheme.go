package signing

import (
	"fmt"
	"net/http"
	"time"
)

// Scheme is one way a hook's sender signs a delivery.
type Scheme int

// The schemes a hook accepts.
const (
	SchemeNone     Scheme = iota
	SchemeBobNet          // X-Bobnet-Signature: sha256=<hex>
	SchemeGitHub          // X-Hub-Signature-256: sha256=<hex>
	SchemeStandard        // webhook-id, webhook-timestamp, webhook-signature: v1,<base64>
)

// Detect says which scheme a request's headers use, looking only at the
// headers, so an unsigned request is refused before its body is read.
// Standard Webhooks wins when several are present.
func Detect(h http.Header) Scheme {
	switch {
	case standardSigned(h):
		return SchemeStandard
	case h.Get(BobNetHeader) != "":
		return SchemeBobNet
	case h.Get(GitHubHeader) != "":
		return SchemeGitHub
	}
	return SchemeNone
}

// header is the header a sha256=<hex> scheme's signature is in.
func (s Scheme) header() string {
	if s == SchemeGitHub {
		return GitHubHeader
	}
	return BobNetHeader
}

// CheckHeaders refuses, from the headers alone, a delivery signed by
// none of the schemes, or whose signature headers are ill-formed, or
// whose timestamp is outside Tolerance, so that no body is read for it;
// it returns the scheme the headers use. Verify still checks the
// signature itself.
func CheckHeaders(h http.Header, now time.Time) (Scheme, error) {
	scheme := Detect(h)
	switch scheme {
	case SchemeBobNet, SchemeGitHub:
		_, err := parseSHA256(scheme.header(), h.Get(scheme.header()))
		return scheme, err
	case SchemeStandard:
		return scheme, CheckStandardHeaders(h, now)
	}
	return scheme, noSignature()
}

// noSignature says which headers a hook's sender may sign with.
func noSignature() error {
	return fmt.Errorf("%w: send %s, %s or the Standard Webhooks headers (%s, %s, %s)",
		ErrMissing, BobNetHeader, GitHubHeader, StandardIDHeader, StandardTimestampHeader, StandardSignatureHeader)
}

// Verify checks body's signature under scheme with secret.
func Verify(scheme Scheme, h http.Header, secret string, body []byte, now time.Time) error {
	switch scheme {
	case SchemeBobNet, SchemeGitHub:
		return VerifySHA256(scheme.header(), h.Get(scheme.header()), secret, body)
	case SchemeStandard:
		return VerifyStandard(h, secret, body, now)
	}
	return noSignature()
}
