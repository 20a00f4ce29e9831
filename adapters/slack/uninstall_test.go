package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
)

// uninstallAt is an app_uninstalled event that happened at eventTime
// (Unix seconds), as Slack sends it and sends it again until acked.
func uninstallAt(team, eventID string, eventTime int64) string {
	b, _ := json.Marshal(map[string]any{"type": "event_callback", "team_id": team, "api_app_id": "A_BOBNET",
		"event_id": eventID, "event_time": eventTime, "event": map[string]any{"type": "app_uninstalled"}})
	return string(b)
}

// TestSlackRetriedUninstallKeepsReinstall: a workspace uninstalls BobNet
// at t1 and installs it again at t2 > t1; Slack then delivers the
// uninstall of t1 again (its first delivery was not acknowledged in
// time), and a tokens_revoked of the old token too. The new installation
// stays, and the workspace is answered with its new token.
func TestSlackRetriedUninstallKeepsReinstall(t *testing.T) {
	t.Parallel()
	w := newTeamsWorld(t)
	ctx := context.Background()
	first := w.install(t, "T_U")

	// t1: a whole second after the first installation, as Slack counts.
	t1 := time.Now().Unix() + 1
	time.Sleep(time.Until(time.Unix(t1, 0)))
	if s := w.post(t, "/slack/events", "application/json", uninstallAt("T_U", "EvU1", t1)); s != http.StatusOK {
		t.Fatalf("app_uninstalled: %d", s)
	}
	if _, err := w.installs.Installation(ctx, "T_U"); !errors.Is(err, board.ErrNotInstalled) {
		t.Fatalf("the installation after app_uninstalled: %v", err)
	}

	// t2 > t1: installed again, with a new token.
	second := w.install(t, "T_U")
	if second == first {
		t.Fatal("the second installation has the first one's token")
	}
	if s := w.post(t, "/slack/events", "application/json", uninstallAt("T_U", "EvU1", t1)); s != http.StatusOK {
		t.Fatalf("app_uninstalled again: %d", s)
	}
	revoked, _ := json.Marshal(map[string]any{"type": "event_callback", "team_id": "T_U", "api_app_id": "A_BOBNET",
		"event_id": "EvU2", "event_time": t1, "event": map[string]any{"type": "tokens_revoked", "tokens": map[string]any{"bot": []string{"U_BOT_T_U"}}}})
	if s := w.post(t, "/slack/events", "application/json", string(revoked)); s != http.StatusOK {
		t.Fatalf("tokens_revoked: %d", s)
	}
	in, err := w.installs.Installation(ctx, "T_U")
	if err != nil || in.BotToken != second {
		t.Fatalf("the new installation after the retried uninstall: token %q (want the new one), %v", in.BotToken, err)
	}
	if w.logs.count("uninstall event older than the installation") != 2 {
		t.Fatalf("the kept installation is not logged twice: %d", w.logs.count("uninstall event older than the installation"))
	}

	// The workspace is still served, with the new token.
	const thread = "1690000000.000101"
	if s := w.post(t, "/slack/events", "application/json", teamMention("T_U", "EvU3", "C0789", thread, "plan our daily research newspaper")); s != http.StatusOK {
		t.Fatalf("mention: %d", s)
	}
	if prev := w.slack.waitFor(t, "the preview after the retried uninstall", isTeamPreview(thread)); prev.Token != second {
		t.Fatalf("preview posted with %q, want the new token %q", prev.Token, second)
	}

	// An uninstall that happened after the new installation removes it.
	if s := w.post(t, "/slack/events", "application/json", uninstallAt("T_U", "EvU4", time.Now().Unix()+1)); s != http.StatusOK {
		t.Fatalf("a later app_uninstalled: %d", s)
	}
	if _, err := w.installs.Installation(ctx, "T_U"); !errors.Is(err, board.ErrNotInstalled) {
		t.Fatalf("the installation after a later app_uninstalled: %v", err)
	}
}
