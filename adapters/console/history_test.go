package console

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestHistorySurvivesARestart: a console started again on the same
// database shows the channel's past, a pending preview included, and
// numbers new events after it.
func TestHistorySurvivesARestart(t *testing.T) {
	t.Parallel()
	store := storetest.NewStore(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	th := board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: "newsroom"}}
	first := New(fakeEngine{}, store, logger)
	first.Publish("newsroom", "message", map[string]any{"user": "alice", "text": "plan our newspaper"})
	_ = first.Reply(context.Background(), th, board.Reply{Text: "on it"})
	_, _ = first.PostPreview(context.Background(), board.Proposal{ID: "p_pendingaaaaaaaaa", State: board.ProposalPending, Thread: th, RequestedBy: "alice"})

	again := New(fakeEngine{}, store, logger)
	past, _ := again.subscribe("newsroom", 0)
	if len(past) != 3 || past[0].Type != "message" || past[2].Type != "proposal" || past[2].ID != 3 {
		t.Fatalf("after the restart the channel holds %+v", past)
	}
	var preview httpapi.ProposalView
	b, _ := json.Marshal(past[2].Data)
	if err := json.Unmarshal(b, &preview); err != nil || preview.ID != "p_pendingaaaaaaaaa" || preview.State != board.ProposalPending {
		t.Fatalf("pending preview after the restart: %+v %v", preview, err)
	}
	_ = again.Reply(context.Background(), th, board.Reply{Text: "still here"})
	if past, _ := again.subscribe("newsroom", 3); len(past) != 1 || past[0].ID != 4 {
		t.Fatalf("new events are not numbered after the old ones: %+v", past)
	}
}
