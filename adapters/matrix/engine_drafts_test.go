package matrix_test

// The engine's own drafts and run progress reach a Matrix room through
// the adapter.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/planner/plannertest"
)

func TestMatrixEngineDraftsAndRunProgress(t *testing.T) {
	w := newWorld(t)
	// A model that writes for three seconds: its draft shows before its
	// answer, however busy the machine (an answer streamed at once may
	// come before the draft's first post, and then the draft is skipped).
	w.env.Model.Push(plannertest.Reply{Content: plannertest.NewspaperPlan(t), Chunks: 30, ChunkDelay: 100 * time.Millisecond})
	w.start()
	w.openRoom()
	req := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	pv := w.waitFor("preview", w.preview(req, 1))
	var first string
	for _, e := range w.rawEvents() {
		if e.ID == pv.ID {
			first = e.Content.AsMessage().Body
		}
	}
	if !strings.Contains(first, "Drafting") || len(w.notices(req, "")) != 1 {
		t.Fatalf("the preview was not the request's draft first: %q (%d notices)", first, len(w.notices(req, "")))
	}
	w.react(w.alice, pv.ID, "✅")
	w.waitFor("approved", w.edit(pv.ID, "Approved by"))
	w.checkBoard(10, 13)

	ctx := context.Background()
	if _, err := w.env.Engine.StartRun(ctx, board.Channel{Source: board.SourceMatrix, ID: string(w.room)}, string(w.alice.ID), ""); err != nil {
		t.Fatal(err)
	}
	note := w.waitFor("run progress", w.fromBot(req, "Run 1 of"))
	job, ok, err := w.env.Store.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	up, err := w.env.Store.CompleteRunCard(ctx, job, "Planner", "today's topics")
	if err != nil {
		t.Fatal(err)
	}
	w.env.Engine.CardOutput(ctx, job, up) // as the run worker does
	w.waitFor("run progress edited", w.edit(note.ID, "1 in progress"))
}
