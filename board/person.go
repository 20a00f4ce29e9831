package board

import "strings"

// A person id names one person by a stable id of their chat platform,
// never by a name they can set. It is what a card's assignee holds when
// the card is assigned to a person rather than to a role (a profile such
// as Researcher):
//   - slack:T…/U… (or W… on Enterprise Grid): a Slack user of one
//     installation, in a multi-workspace BobNet; the installation is the
//     workspace (T…) or an org installed org-wide (E…);
//   - slack:U…: a Slack user of the one workspace of a single-workspace
//     BobNet;
//   - matrix:@alice:server: a Matrix user.
//
// A Slack person may be assigned only on the boards of their own
// installation (Person.AssignableIn); a Matrix user, who can join any
// room, on the board of any Matrix room.
type Person struct {
	// Platform is "slack" or "matrix".
	Platform string
	// Installation is a Slack person's installation (T… or E…) in a
	// multi-workspace BobNet, "" in a single-workspace one and on Matrix.
	Installation string
	// User is the platform's id of the person: U… or W… on Slack,
	// @alice:server on Matrix.
	User string
}

// maxPersonID bounds a person id: Matrix user ids are at most 255 bytes.
const maxPersonID = 300

// SlackPerson is the person id of a Slack user of an installation ("" in
// single-workspace mode).
func SlackPerson(installation, user string) string {
	if installation == "" {
		return "slack:" + user
	}
	return "slack:" + installation + "/" + user
}

// MatrixPerson is the person id of a Matrix user (@alice:server).
func MatrixPerson(user string) string { return "matrix:" + user }

// IsPerson reports whether s is a person id (and not a role).
func IsPerson(s string) bool {
	_, ok := ParsePerson(s)
	return ok
}

// LooksLikePerson reports whether s is written as a person id or a
// platform's mention (slack:…, matrix:…, @…, Slack's <@…> and <!…>),
// valid or not: a value that must be a valid person id and may never be
// taken for a role.
func LooksLikePerson(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "slack:") || strings.HasPrefix(s, "matrix:") || strings.HasPrefix(s, "@") || strings.HasPrefix(s, "<")
}

// ParsePerson reads a person id; ok is false for anything else, roles
// included.
func ParsePerson(s string) (Person, bool) {
	if len(s) > maxPersonID {
		return Person{}, false
	}
	platform, rest, _ := strings.Cut(s, ":")
	switch platform {
	case "slack":
		inst, user, scoped := strings.Cut(rest, "/")
		if !scoped {
			inst, user = "", rest
		} else if !slackID(inst, "TE") {
			return Person{}, false
		}
		if !slackID(user, "UW") {
			return Person{}, false
		}
		return Person{Platform: "slack", Installation: inst, User: user}, true
	case "matrix":
		if !MatrixUserID(rest) {
			return Person{}, false
		}
		return Person{Platform: "matrix", User: rest}, true
	}
	return Person{}, false
}

// String is the person id.
func (p Person) String() string {
	if p.Platform == "matrix" {
		return MatrixPerson(p.User)
	}
	return SlackPerson(p.Installation, p.User)
}

// Label is how a person is shown where no platform draws a mention (the
// board page, plain text): "@U123", "@alice:server".
func (p Person) Label() string {
	if p.Platform == "matrix" {
		return p.User
	}
	return "@" + p.User
}

// AssignableIn reports whether p may be assigned a card of a board of
// tenant t: a Slack person on the boards of their own installation (the
// tenant "slack" of a single-workspace BobNet for slack:U…), a Matrix
// person on a Matrix room's.
func (p Person) AssignableIn(t Tenant) bool {
	switch p.Platform {
	case "slack":
		return t == p.Tenant()
	case "matrix":
		return strings.HasPrefix(string(t), "matrix:!")
	}
	return false
}

// Tenant is the tenant a Slack person belongs to (slack:T…, or slack in
// single-workspace mode); a Matrix person belongs to no one tenant ("").
func (p Person) Tenant() Tenant {
	switch {
	case p.Platform != "slack":
		return ""
	case p.Installation == "":
		return "slack"
	}
	return Tenant("slack:" + p.Installation)
}

// AssigneeLabel is a card's assignee as shown in text: a person id as its
// Label, a role as it is.
func AssigneeLabel(assignee string) string {
	if p, ok := ParsePerson(assignee); ok {
		return p.Label()
	}
	return assignee
}

// slackID reports whether s is a Slack id starting with one of the
// letters of first: upper-case letters and digits (underscores too, which
// Slack does not hand out but which harm nothing).
func slackID(s, first string) bool {
	if len(s) < 2 || len(s) > 32 || !strings.ContainsRune(first, rune(s[0])) {
		return false
	}
	for _, r := range s[1:] {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// MatrixUserID reports whether s is a Matrix user id, @localpart:server:
// a localpart of printable ASCII without a colon (the historical grammar,
// a superset of today's), and a server name of a host name or IP address
// with an optional port.
func MatrixUserID(s string) bool {
	local, server, ok := strings.Cut(strings.TrimPrefix(s, "@"), ":")
	if !ok || !strings.HasPrefix(s, "@") || local == "" || server == "" || len(s) > 255 {
		return false
	}
	for _, r := range local {
		if r <= ' ' || r > '~' {
			return false
		}
	}
	for _, r := range server {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-:[]", r)) {
			return false
		}
	}
	return true
}
