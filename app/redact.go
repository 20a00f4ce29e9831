package app

import (
	"errors"
	"regexp"
	"strings"
)

// urlPassword matches the password part of a URL's user info
// ("postgres://bobnet:PASSWORD@host"), in a URL that may be malformed or
// sit inside a longer message.
var urlPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^:/?#@\s"'<>]*):([^@\s"'<>]*)@`)

// passwordParam matches a password given as a query parameter, as some
// Redis and Postgres clients accept ("?password=…").
var passwordParam = regexp.MustCompile(`(?i)([?&](?:password|pass)=)[^&\s"'<>]*`)

// masked stands in for a removed secret.
const masked = "xxxxx"

// redactURLs masks every URL password in s, so a connection string can be
// shown in an error or a log line without what opens the database.
func redactURLs(s string) string {
	if !strings.Contains(s, "://") && !strings.Contains(strings.ToLower(s), "pass") {
		return s
	}
	s = urlPassword.ReplaceAllString(s, "${1}:"+masked+"@")
	return passwordParam.ReplaceAllString(s, "${1}"+masked)
}

// configError is every problem found in the settings, one per variable.
// Its text masks URL passwords, since a malformed URL is quoted back.
type configError struct{ errs []error }

func (e configError) Error() string {
	var b strings.Builder
	for i, err := range e.errs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(redactURLs(err.Error()))
	}
	return b.String()
}

func (e configError) Unwrap() []error { return e.errs }

// newConfigError is nil when there is no problem.
func newConfigError(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return configError{errs}
}

// ConfigProblems lists what LoadConfig or RequireServices found wrong in
// the settings, one line per problem with URL passwords masked, and
// reports whether err is such a finding (false: the flag package refused
// the command line, and has said so already).
func ConfigProblems(err error) ([]string, bool) {
	var ce configError
	if !errors.As(err, &ce) {
		return nil, false
	}
	out := make([]string, len(ce.errs))
	for i, e := range ce.errs {
		out[i] = redactURLs(e.Error())
	}
	return out, true
}
