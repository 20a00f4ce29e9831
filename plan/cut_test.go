package plan_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bobnet/bobnet/plan"
)

// TestCutKeepsCharactersWhole: a cut that falls inside a character keeps
// the whole characters before it; the mark fits within the limit.
func TestCutKeepsCharactersWhole(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s     string
		limit int
		mark  string
		want  string
	}{
		{"short", 10, "…", "short"},
		{"exactly", 7, "…", "exactly"},
		{"abcé", 4, "", "abc"},  // é is two bytes, the cut falls between them
		{"abcé", 5, "", "abcé"}, // it fits
		{"abcdef", 5, "…", "ab…"},
		{"ab€def", 6, "…", "ab…"},        // € (3 bytes) does not fit with the mark
		{"abcdef", 2, "…", "ab"},         // the mark does not fit: left out
		{"a\xffbc", 10, "", "a\uFFFDbc"}, // invalid bytes are replaced
		{"anything", 0, "…", ""},
		{"🙂🙂", 5, "", "🙂"},
	} {
		if got := plan.Cut(c.s, c.limit, c.mark); got != c.want {
			t.Errorf("Cut(%q, %d, %q) = %q, want %q", c.s, c.limit, c.mark, got, c.want)
		}
	}
}

// FuzzCut: whatever the text, the limit and the mark, the cut is valid
// UTF-8 within the limit, a prefix of the (valid) text when nothing was
// cut off, and the text itself when it fit.
func FuzzCut(f *testing.F) {
	f.Add("abcé", 4, "")
	f.Add(strings.Repeat("é", 100)+"x", 101, "…")
	f.Add("a\xff\xfe", 2, "\xff")
	f.Add("🙂", 3, "…(cut)")
	f.Fuzz(func(t *testing.T, s string, limit int, mark string) {
		got := plan.Cut(s, limit, mark)
		if !utf8.ValidString(got) {
			t.Fatalf("Cut(%q, %d, %q) = %q: not valid UTF-8", s, limit, mark, got)
		}
		if len(got) > max(limit, 0) {
			t.Fatalf("Cut(%q, %d, %q) = %q: %d bytes, over the limit", s, limit, mark, got, len(got))
		}
		valid := strings.ToValidUTF8(s, "\uFFFD")
		if limit > 0 && len(valid) <= limit && got != valid {
			t.Fatalf("Cut(%q, %d, %q) = %q: it fit, want it whole", s, limit, mark, got)
		}
		if len(valid) > limit {
			kept := got
			if utf8.ValidString(mark) && len(mark) <= limit {
				kept = strings.TrimSuffix(got, mark)
			}
			if !strings.HasPrefix(valid, kept) {
				t.Fatalf("Cut(%q, %d, %q) = %q: not the start of the text", s, limit, mark, got)
			}
			if len(valid)-len(kept) > 0 && limit-len(mark) >= utf8.UTFMax && len(kept) < limit-len(mark)-(utf8.UTFMax-1) {
				t.Fatalf("Cut(%q, %d, %q) = %q: cut more than one character short of the limit", s, limit, mark, got)
			}
		}
	})
}
