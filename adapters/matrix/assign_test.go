package matrix

import (
	"strings"
	"testing"
)

// TestAssignArgs: `!bobnet assign`'s last argument becomes a person id
// when it is a user id or the text of a pill ending the message; anything
// else is passed on as it is, for the engine to take as a role or refuse.
func TestAssignArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body, html, want string
	}{
		{"NEWS-3 @alice:example.org", "", "NEWS-3|matrix:@alice:example.org"},
		{"research b @alice:example.org", "", "research b|matrix:@alice:example.org"},
		{"NEWS-3 Alice Liddell", `!bobnet assign NEWS-3 <a href="https://matrix.to/#/@alice:example.org">Alice Liddell</a>`, "NEWS-3|matrix:@alice:example.org"},
		{"NEWS-3 Alice", `!bobnet assign NEWS-3 <a href="https://matrix.to/#/%40alice%3Aexample.org?via=example.org">Alice</a> `, "NEWS-3|matrix:@alice:example.org"},
		{"NEWS-3 A & B", `!bobnet assign NEWS-3 <a href="https://matrix.to/#/@ab:example.org">A &amp; B</a>`, "NEWS-3|matrix:@ab:example.org"},
		// The pill's text is not what the body ends with: not a pill of
		// this command's assignee.
		{"NEWS-3 Researcher", `!bobnet assign NEWS-3 <a href="https://matrix.to/#/@alice:example.org">Alice</a>`, "NEWS-3|Researcher"},
		// A room link is no person.
		{"NEWS-3 news", `!bobnet assign NEWS-3 <a href="https://matrix.to/#/!room:example.org">news</a>`, "NEWS-3|news"},
		{"NEWS-3 Researcher", "", "NEWS-3|Researcher"},
		{"NEWS-3 @alice", "", "NEWS-3|@alice"},
		{"NEWS-3 none", "", "NEWS-3|none"},
		{"@alice:example.org", "", "@alice:example.org"},
	} {
		got := assignArgs(strings.Fields(tc.body), tc.html)
		want := strings.Split(tc.want, "|")
		if len(got) > 1 {
			got = []string{strings.Join(got[:len(got)-1], " "), got[len(got)-1]}
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("assignArgs(%q, %q) = %q, want %q", tc.body, tc.html, got, want)
		}
	}
}
