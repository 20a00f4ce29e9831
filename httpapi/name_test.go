package httpapi

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidNameMatchesTheDocumentedPattern checks the loop against the
// pattern the API documents, as a regular expression.
func TestValidNameMatchesTheDocumentedPattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[\p{L}\p{N}._@-]{1,64}$`)
	cases := []string{
		"", "ana", "ana.b_c@d-e", "Ünïcødé", "名前", "٣٤", "x y", "a/b", "a\x00",
		"\xff", "ana\xffb", "émoji😀", "tab\t", "a+b", "Ⅻ", "½",
		strings.Repeat("a", 64), strings.Repeat("a", 65),
		strings.Repeat("é", 64), strings.Repeat("é", 65), strings.Repeat("名", 64),
	}
	for _, c := range cases {
		if got, want := ValidName(c), pattern.MatchString(c); got != want {
			t.Errorf("ValidName(%q) = %v, the pattern says %v", c, got, want)
		}
	}
}
