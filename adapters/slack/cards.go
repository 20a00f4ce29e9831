package slack

import (
	"regexp"
	"strings"

	"github.com/bobnet/bobnet/board"
)

// slackMention is a user mention at the end of a slash command's text, as
// Slack escapes it (<@U123> or <@U123|alice>).
var slackMention = regexp.MustCompile(`^(.*?)\s*<@([UW][A-Z0-9_]+)(?:\|[^>]*)?>$`)

// assignArgs turns a person mentioned at the end of `/bobnet assign`'s
// arguments (<@U123|alice>) into their person id in the channel's
// installation, the last argument; the others are as they are (the last
// word a profile, none, or a name Slack did not turn into a mention).
func (a *Adapter) assignArgs(channel string, args []string) []string {
	if m := slackMention.FindStringSubmatch(strings.Join(args, " ")); m != nil {
		installation, _ := a.viewerUser(channel)
		return append(strings.Fields(m[1]), board.SlackPerson(installation, m[2]))
	}
	return args
}

// assigneeMention shows an assignee in Slack text about a board of tenant
// t: a person of t's installation as a mention (<@U123>), anyone else by
// their label, escaped, a role as it is, escaped.
func assigneeMention(t board.Tenant) func(string) string {
	return func(assignee string) string {
		if assignee == "" {
			return "Unassigned"
		}
		if p, ok := board.ParsePerson(assignee); ok && p.Platform == "slack" && p.Tenant() == t {
			return "<@" + escape(p.User) + ">"
		}
		return escape(board.AssigneeLabel(assignee))
	}
}
