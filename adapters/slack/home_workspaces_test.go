package slack_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestSlackAppHomeInTwoWorkspaces: the same person id opens BobNet's
// Home in two workspaces whose channels share an id; each Home is
// published with its own workspace's token and lists only that
// workspace's proposals.
func TestSlackAppHomeInTwoWorkspaces(t *testing.T) {
	t.Parallel()
	w := newTeamsWorld(t)
	tokA, tokB := w.install(t, "T_A"), w.install(t, "T_B")

	const threadA, threadB = "1690000000.000011", "1690000000.000012"
	w.post(t, "/slack/events", "application/json", teamMention("T_A", "EvHA1", "C0123", threadA, "plan our daily research newspaper"))
	w.post(t, "/slack/events", "application/json", teamMention("T_B", "EvHB1", "C0123", threadB, "plan our daily research newspaper"))
	prevA := w.slack.waitFor(t, "team A's preview", isTeamPreview(threadA))
	prevB := w.slack.waitFor(t, "team B's preview", isTeamPreview(threadB))
	pidA := proposalID.FindStringSubmatch(prevA.Form.Get("blocks"))[1]
	pidB := proposalID.FindStringSubmatch(prevB.Form.Get("blocks"))[1]

	for _, tc := range []struct{ team, token, mine, theirs string }{
		{"T_B", tokB, pidB, pidA},
		{"T_A", tokA, pidA, pidB},
	} {
		if s := w.post(t, "/slack/events", "application/json", teamEvent(tc.team, "EvHome"+tc.team, map[string]any{"type": "app_home_opened", "user": "U_ALICE", "tab": "home", "channel": "D_" + tc.team})); s != http.StatusOK {
			t.Fatalf("app_home_opened in %s: %d", tc.team, s)
		}
		home := w.slack.waitFor(t, tc.team+"'s home", func(c teamCall) bool {
			return c.Method == "views.publish" && c.Token == tc.token && strings.Contains(c.Body, tc.mine)
		})
		if strings.Contains(home.Body, tc.theirs) {
			t.Errorf("%s's home lists the other workspace's proposal %s", tc.team, tc.theirs)
		}
		if !strings.Contains(home.Body, `"user_id":"U_ALICE"`) {
			t.Errorf("%s's home published for someone else: %s", tc.team, home.Body)
		}
	}
}
