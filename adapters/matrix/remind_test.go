package matrix

import (
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
)

func TestCancelReason(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "",
		"because":                      "",
		"Because the budget moved ":    "the budget moved",
		"wrong week":                   "wrong week",
		"becausewhy":                   "becausewhy",
		"because <b>it</b> @room x.io": "<b>it</b> @room x.io",
	} {
		if got := cancelReason(in); got != want {
			t.Errorf("cancelReason(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCancelledPreviewShowsTheReasonInert(t *testing.T) {
	p := board.Proposal{State: board.ProposalCancelled, DecidedBy: "@alice:example.org", Reason: "see <script>x</script> at evil.com @room"}
	msg := renderPreview(p, "https://bobnet.example.com")
	if strings.Contains(msg.HTML, "<script>") || strings.Contains(msg.Plain, "evil.com") || strings.Contains(msg.Plain, "@room") {
		t.Fatalf("reason is live: %q / %q", msg.Plain, msg.HTML)
	}
	if !strings.Contains(msg.HTML, "&lt;script&gt;") || !strings.Contains(msg.Plain, ": see <script>x</script> at evil.\u200bcom @\u2060room") {
		t.Fatalf("reason not shown: %q / %q", msg.Plain, msg.HTML)
	}
}

func TestReminderMentionsMatrixDeciders(t *testing.T) {
	p := board.Proposal{ID: "p_1", Plan: plan.Envelope{Actions: []plan.Action{{Type: plan.ActionCreateBoard, Board: &plan.BoardDraft{Name: "News <b>@room</b>"}}}}}
	msg, users := renderReminder(bot.Reminder{Proposal: p, Deciders: []string{"@alice:example.org", "root", "U123", "@bob:example.org"}, Left: 6 * time.Hour})
	if len(users) != 2 || users[0] != id.UserID("@alice:example.org") || users[1] != id.UserID("@bob:example.org") {
		t.Fatalf("mentions = %v", users)
	}
	if !strings.HasPrefix(msg.Plain, "⏰ Reminder for @alice:example.org, @bob:example.org: “News <b>@\u2060room</b>” is still waiting for a decision and expires in 6h.") {
		t.Fatalf("plain = %q", msg.Plain)
	}
	if !strings.Contains(msg.HTML, `<a href="https://matrix.to/#/@alice:example.org">@alice:example.org</a>`) || strings.Contains(msg.HTML, "<b>@") {
		t.Fatalf("html = %q", msg.HTML)
	}
}
