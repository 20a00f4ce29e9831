//go:build goolm

package matrix_test

import (
	"context"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// TestMatrixEncryptedDraftAndRunProgress: in an encrypted room the draft,
// its edits into the preview and a run's progress are all encrypted, each
// edit's new content inside the encrypted payload with only the relation
// beside it, as the spec has it; alice's client decrypts every edit, and
// her encrypted ✅ on the draft's notice approves.
func TestMatrixEncryptedDraftAndRunProgress(t *testing.T) {
	w := newWorld(t)
	w.encrypt = true
	r := w.start()
	w.openEncryptedRoom(t)

	g := w.gatedRequest("plan our daily research newspaper")
	draft := w.draftThenPreview(r.ad, g)
	if !draft.Mautrix.WasEncrypted {
		t.Fatal("the draft in an encrypted room was sent in the clear")
	}
	var edits []*event.Event
	for _, e := range w.events() {
		if w.edit(draft.ID, "")(e) {
			edits = append(edits, e)
		}
	}
	if len(edits) != 2 {
		t.Fatalf("%d edits of the draft, want the 4-card draft and the preview", len(edits))
	}
	for _, e := range edits {
		if !e.Mautrix.WasEncrypted {
			t.Fatalf("edit %s was sent in the clear", e.ID)
		}
		w.checkEncryptedEdit(e.ID, draft.ID)
	}
	pv := w.waitFor("the preview as shown", func(e *event.Event) bool { return e.Mautrix.WasEncrypted && w.preview(g.root, 1)(e) })
	if pv.ID != draft.ID {
		t.Fatalf("the preview is %s, not the draft's notice %s", pv.ID, draft.ID)
	}
	w.reactEncrypted(draft.ID, "✅")
	w.waitFor("encrypted edit to approved", func(e *event.Event) bool {
		return e.Mautrix.WasEncrypted && w.edit(draft.ID, "Approved by "+string(w.alice.ID))(e)
	})
	w.checkBoard(10, 13)

	note := w.runProgress(r.ad, r.ad, g.root)
	if !note.Mautrix.WasEncrypted {
		t.Fatal("the run's progress in an encrypted room was sent in the clear")
	}
	for _, e := range w.events() {
		if w.edit(note.ID, "")(e) {
			if !e.Mautrix.WasEncrypted {
				t.Fatalf("run progress edit %s was sent in the clear", e.ID)
			}
			w.checkEncryptedEdit(e.ID, note.ID)
		}
	}
}

// checkEncryptedEdit reads edit as the homeserver holds it: an
// m.room.encrypted event whose clear content says only that it replaces
// target, with nothing of the new content.
func (w *world) checkEncryptedEdit(edit, target id.EventID) {
	t := w.t
	t.Helper()
	raw, err := w.carol.cli.GetEvent(ctx30(t), w.room, edit)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Type != event.EventEncrypted {
		t.Fatalf("edit %s is a %s, not encrypted", edit, raw.Type.Type)
	}
	rel, _ := raw.Content.Raw["m.relates_to"].(map[string]any)
	if rel["rel_type"] != string(event.RelReplace) || rel["event_id"] != string(target) {
		t.Fatalf("edit %s: the clear relation is %v, want m.replace of %s", edit, rel, target)
	}
	for k := range raw.Content.Raw {
		if strings.Contains(k, "new_content") || k == "body" {
			t.Fatalf("edit %s shows %q in the clear", edit, k)
		}
	}
}

// reactEncrypted has alice's client react to target with key, encrypted
// as Element does.
func (w *world) reactEncrypted(target id.EventID, key string) {
	t := w.t
	t.Helper()
	ctx := context.Background()
	reaction := &event.ReactionEventContent{RelatesTo: event.RelatesTo{Type: event.RelAnnotation, EventID: target, Key: key}}
	enc, err := w.alice.cli.Crypto.Encrypt(ctx, w.room, event.EventReaction, reaction)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.alice.cli.SendMessageEvent(ctx, w.room, event.EventEncrypted, enc); err != nil {
		t.Fatal(err)
	}
}
