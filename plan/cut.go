package plan

import (
	"strings"
	"unicode/utf8"
)

// Cut is s in at most limit bytes of valid UTF-8: every place BobNet cuts
// text to a size (an output, an error, an audit row, a quote) cuts it
// here, so no cut ends in the middle of a character and no cut text is
// refused by Postgres or shown broken. Invalid bytes in s become U+FFFD
// first. When s had to be cut, mark ends the result, within the limit;
// a mark that does not fit (or is not valid UTF-8) is left out. A limit
// below one is the empty string.
func Cut(s string, limit int, mark string) string {
	if limit <= 0 {
		return ""
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= limit {
		return s
	}
	if len(mark) > limit || !utf8.ValidString(mark) {
		mark = ""
	}
	end := limit - len(mark)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + mark
}
