package matrix

import (
	"html"
	"net/url"
	"regexp"
	"strings"

	"github.com/bobnet/bobnet/board"
)

// pillAtEnd is a user pill ending a message's HTML: a matrix.to link to a
// user id (perhaps percent-encoded) and the text shown for it.
var pillAtEnd = &lazy[*regexp.Regexp]{build: func() *regexp.Regexp {
	return regexp.MustCompile(`<a href="https://matrix\.to/#/([^"?/]+)[^"]*">([^<]*)</a>\s*$`)
}}

// assignArgs reads `!bobnet assign`'s arguments as the card and, last,
// whom to assign it to: a person as their person id (matrix:@alice:server)
// when the message ends with a user id or a pill (whose body text is the
// user's display name), else the last word as it is (a profile, none, or
// something the engine refuses). formatted is the message's HTML, if any.
func assignArgs(args []string, formatted string) []string {
	if m := pillAtEnd.get().FindStringSubmatch(formatted); m != nil {
		user, err := url.PathUnescape(m[1])
		shown := strings.Fields(html.UnescapeString(m[2]))
		if err == nil && board.MatrixUserID(user) && len(shown) > 0 && len(args) > len(shown) &&
			strings.Join(args[len(args)-len(shown):], " ") == strings.Join(shown, " ") {
			return append(args[:len(args)-len(shown):len(args)-len(shown)], board.MatrixPerson(user))
		}
	}
	if n := len(args); n >= 2 && board.MatrixUserID(args[n-1]) {
		return append(args[:n-1:n-1], board.MatrixPerson(args[n-1]))
	}
	return args
}
