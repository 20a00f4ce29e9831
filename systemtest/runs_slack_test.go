package systemtest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestRunsFromSlackCommands: /bobnet runs, schedule, run, status, sendback
// and accept drive a run of the channel's board from Slack.
func TestRunsFromSlackCommands(t *testing.T) {
	t.Parallel()
	sink := newSlackSink(t)
	a := start(t, withEnv(map[string]string{
		"BOBNET_API_TOKEN": "test-token", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "shh", "SLACK_API_URL": sink.srv.URL + "/api/",
	}))
	ctx := context.Background()
	var sub struct {
		RequestID string `json:"request_id"`
	}
	if code := a.call(t, "POST", "/api/v1/channels/newsroom/messages", map[string]string{"user": "alice", "text": "plan our daily research newspaper"}, &sub); code != http.StatusAccepted {
		t.Fatalf("post message: %d", code)
	}
	req := a.waitRequest(t, sub.RequestID)
	var approved struct {
		BoardID board.ID `json:"board_id"`
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+req.ProposalID+"/approve", map[string]string{"user": "alice"}, &approved); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	store, err := store.Open(ctx, a.DB, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// The board moves to the Slack channel, and so to its tenant: keys
	// and handles said in Slack find only Slack's boards.
	if err := store.BindChannel(ctx, "slack:C_NEWS", approved.BoardID); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, a.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `UPDATE boards SET channel = 'slack:C_NEWS' WHERE id = $1`, approved.BoardID); err != nil {
		t.Fatal(err)
	}

	for _, step := range []struct{ text, want string }{
		{"runs", "has not run yet"},
		{"schedule NEWS daily 06:00 Mars/Base", "not an IANA time zone"},
		{"schedule NEWS daily 06:00 Europe/Berlin", "runs on `0 6 * * *` (Europe/Berlin); next run"},
		{"run", "Run 1 started"},
		{"run NEWS", "has a run going"},
		{"status", "Latest run: 1, running"},
		{"status", "Runs on `0 6 * * *` (Europe/Berlin), next"},
		{"sendback NEWS-1", "when sending back, why"},
	} {
		if got := slashCommand(t, a, "U_BOB", step.text); !strings.Contains(got, step.want) {
			t.Errorf("/bobnet %s: %q, want %q", step.text, got, step.want)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := store.CardByHandle(ctx, "", "NEWS-1")
		if err != nil {
			t.Fatal(err)
		}
		if c.Status == "Review" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("NEWS-1 never reached Review: %s", c.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := slashCommand(t, a, "U_MALLORY", "accept NEWS-1"); !strings.Contains(got, "can't review") {
		t.Errorf("a stranger's accept: %q", got)
	}
	if got := slashCommand(t, a, "U_BOB", "sendback NEWS-1 cite the law"); !strings.Contains(got, "NEWS-1 is now Ready") {
		t.Errorf("send back: %q", got)
	}
	if got := slashCommand(t, a, "U_BOB", "schedule NEWS off"); !strings.Contains(got, "no longer runs on a schedule") {
		t.Errorf("schedule off: %q", got)
	}
}
