package matrix_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/bobnet/bobnet/board"
)

func TestMatrixCancelBecause(t *testing.T) {
	w := newWorld(t)
	w.start()
	w.openRoom()
	req := w.say(w.alice, "hey bobnet, plan our daily research newspaper", "", false)
	v1 := w.waitFor("v1", w.preview(req, 1))
	w.say(w.alice, "!cancel because the <b>budget</b> moved @room", req, false)
	w.waitFor("the redrawn preview", w.edit(v1.ID, "Cancelled by "+string(w.alice.ID)))
	w.waitFor("the thread's line", w.fromBot(req, ": the <b>budget</b> moved @\u2060room"))
	evs, err := w.env.Store.Audit(context.Background(), board.AuditFilter{Channel: "matrix:" + string(w.room)})
	if err != nil {
		t.Fatal(err)
	}
	var detail map[string]any
	last := evs[len(evs)-1]
	if last.Action != "cancelled" || json.Unmarshal(last.Detail, &detail) != nil || detail["reason"] != "the <b>budget</b> moved @room" {
		t.Fatalf("audit = %+v", last)
	}
	p, err := w.env.Engine.Proposal(context.Background(), last.ProposalID)
	if err != nil || p.State != board.ProposalCancelled || p.Reason != "the <b>budget</b> moved @room" {
		t.Fatalf("proposal = %+v, %v", p.State, err)
	}
}
