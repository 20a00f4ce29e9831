package board_test

import (
	"testing"

	"github.com/bobnet/bobnet/board"
)

func TestParsePerson(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in     string
		ok     bool
		tenant board.Tenant
		label  string
	}{
		{"slack:T123/U456", true, "slack:T123", "@U456"},
		{"slack:E123/W456", true, "slack:E123", "@W456"},
		{"slack:U456", true, "slack", "@U456"},
		{"matrix:@alice:example.org", true, "", "@alice:example.org"},
		{"matrix:@bob:[::1]:8448", true, "", "@bob:[::1]:8448"},
		{"Researcher", false, "", ""},
		{"", false, "", ""},
		{"@alice", false, "", ""},
		{"<@U456>", false, "", ""},
		{"slack:", false, "", ""},
		{"slack:T123/", false, "", ""},
		{"slack:T123/C456", false, "", ""},
		{"slack:C123/U456", false, "", ""},
		{"slack:u456", false, "", ""},
		{"slack:T1/U2/U3", false, "", ""},
		{"matrix:alice:example.org", false, "", ""},
		{"matrix:@alice", false, "", ""},
		{"matrix:@:example.org", false, "", ""},
		{"matrix:@al ice:example.org", false, "", ""},
		{"matrix:@alice:exa<mple.org", false, "", ""},
		{"matrix:!room:example.org", false, "", ""},
	} {
		p, ok := board.ParsePerson(tc.in)
		if ok != tc.ok || board.IsPerson(tc.in) != tc.ok {
			t.Errorf("ParsePerson(%q) ok = %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if !ok {
			if board.AssigneeLabel(tc.in) != tc.in {
				t.Errorf("a role %q is labelled %q", tc.in, board.AssigneeLabel(tc.in))
			}
			continue
		}
		if p.String() != tc.in || p.Tenant() != tc.tenant || p.Label() != tc.label || board.AssigneeLabel(tc.in) != tc.label {
			t.Errorf("ParsePerson(%q) = %+v: %q, tenant %q, label %q", tc.in, p, p.String(), p.Tenant(), p.Label())
		}
	}
	if board.SlackPerson("T1", "U2") != "slack:T1/U2" || board.SlackPerson("", "U2") != "slack:U2" || board.MatrixPerson("@a:b") != "matrix:@a:b" {
		t.Error("person ids are not built as parsed")
	}
}

// TestPersonAssignableIn: a Slack person only on their own installation's
// boards, a Matrix person on any Matrix room's.
func TestPersonAssignableIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		person, channel string
		ok              bool
	}{
		{"slack:T1/U1", "slack:T1/C1", true},
		{"slack:T1/U1", "slack:T2/C1", false},
		{"slack:T1/U1", "slack:C1", false},
		{"slack:U1", "slack:C1", true},
		{"slack:U1", "slack:T1/C1", false},
		{"slack:E1/W1", "slack:E1/C1", true},
		{"slack:T1/U1", "matrix:!room:example.org", false},
		{"slack:T1/U1", "console:general", false},
		{"matrix:@a:example.org", "matrix:!room:example.org", true},
		{"matrix:@a:example.org", "matrix:!other:elsewhere.net", true},
		{"matrix:@a:example.org", "slack:T1/C1", false},
		{"matrix:@a:example.org", "console:general", false},
		{"matrix:@a:example.org", "webhook:ci", false},
	} {
		p, ok := board.ParsePerson(tc.person)
		if !ok {
			t.Fatalf("%q is no person", tc.person)
		}
		if got := p.AssignableIn(board.TenantOf(tc.channel)); got != tc.ok {
			t.Errorf("%s assignable on a board of %s: %v, want %v", tc.person, tc.channel, got, tc.ok)
		}
	}
}

func TestLooksLikePerson(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"@alice": true, "<@U1|a>": true, "<!subteam^S1>": true, "slack:x": true, "matrix:x": true,
		"Researcher": false, "Data Engineer": false, "": false,
	} {
		if board.LooksLikePerson(in) != want {
			t.Errorf("LooksLikePerson(%q) = %v", in, !want)
		}
	}
}
