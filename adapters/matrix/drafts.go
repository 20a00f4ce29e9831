package matrix

import (
	"context"
	"errors"
	"fmt"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// Notes remembers the notices that show work in progress, across
// replicas: the notice a request's draft was posted as (and what it
// became), and the notice a run's progress is shown in. The worker that
// drew a draft may die and another replica answer the request, and a
// run's cards move on whichever replica works them, so these live in
// Redis, beside the request records, rather than in memory;
// *redisstore.InFlight is one.
type Notes interface {
	ClaimDraftMessage(ctx context.Context, req board.RequestID, ref board.MessageRef) (board.MessageRef, error)
	DraftMessage(ctx context.Context, req board.RequestID) (ref board.MessageRef, answer string, err error)
	SetDraftAnswer(ctx context.Context, req board.RequestID, answer string) error
	ClaimRunProgressMessage(ctx context.Context, run board.RunID, ref board.MessageRef) (board.MessageRef, error)
	RunProgressMessage(ctx context.Context, run board.RunID) (board.MessageRef, error)
}

// What a draft became, as Notes records it.
const (
	answerPreview = "preview"
	answerReply   = "reply"
)

var _ bot.Drafter = (*Adapter)(nil)

// Draft shows a plan while the model writes it: one "drafting…" notice
// in the request's thread, posted at the first call and edited
// (m.replace) as cards come, at most once a second. The answer replaces
// it (answerDraft).
func (a *Adapter) Draft(ctx context.Context, d bot.Draft) error {
	if d.Request == "" {
		return fmt.Errorf("matrix draft: no request")
	}
	msg := renderDraft(d)
	return a.pace.update(ctx, draftKey(d.Request), func(ctx context.Context, evt *id.EventID) error {
		// Asked every time, not only the first: another worker may have
		// drawn this draft before it died, and another replica may have
		// answered the request while a stale worker still drafts.
		ref, answer, err := a.memory.DraftMessage(ctx, d.Request)
		if err != nil {
			return fmt.Errorf("matrix draft: %w", err)
		}
		if answer != "" {
			return nil // answered already: the draft is gone for good
		}
		if ref != "" {
			*evt = id.EventID(ref)
		}
		if *evt == "" {
			posted, err := a.postNote(ctx, d.Thread, msg, func(ctx context.Context, ref board.MessageRef) (board.MessageRef, error) {
				return a.memory.ClaimDraftMessage(ctx, d.Request, ref)
			})
			*evt = posted
			if err != nil {
				return fmt.Errorf("matrix draft: %w", err)
			}
			return nil
		}
		return a.edit(ctx, d.Thread, *evt, msg)
	})
}

func draftKey(req board.RequestID) string { return "draft:" + string(req) }

// postNote posts the first notice of a draft or a run's progress and
// records it with claim; when another replica recorded one first, it
// takes its own back and edits that one.
func (a *Adapter) postNote(ctx context.Context, thread board.Thread, msg message, claim func(context.Context, board.MessageRef) (board.MessageRef, error)) (id.EventID, error) {
	evt, err := a.send(ctx, thread, msg)
	if err != nil {
		return "", err
	}
	kept, err := claim(ctx, board.MessageRef(evt))
	if err != nil {
		// Unrecorded, the next update or the answer would not find it:
		// take it back rather than leave it behind.
		a.redact(thread, evt)
		return "", err
	}
	if id.EventID(kept) != evt {
		a.redact(thread, evt)
		return id.EventID(kept), a.edit(ctx, thread, id.EventID(kept), msg)
	}
	return evt, nil
}

// answerDraft turns request's draft, if one was drawn (on any replica),
// into its answer msg, as an edit of the draft's notice, and returns that
// notice; empty when there was no draft to turn, or it already became an
// answer of another kind, and the caller posts msg as a message of its
// own. Editing again is harmless, so an answer posted a second time (a
// retry after a lost response) edits the same notice and posts no second
// one.
func (a *Adapter) answerDraft(ctx context.Context, req board.RequestID, thread board.Thread, msg message, kind string) (id.EventID, error) {
	if req == "" {
		return "", nil
	}
	var out id.EventID
	err := a.pace.final(ctx, draftKey(req), func(ctx context.Context, evt *id.EventID) error {
		ref, answer, err := a.memory.DraftMessage(ctx, req)
		if err != nil {
			if *evt == "" {
				// Without the record a draft drawn elsewhere is not found;
				// the answer still goes out as a message of its own.
				a.logger.Warn("matrix: look up a request's draft", "request", req, "err", err)
				return nil
			}
			ref = board.MessageRef(*evt)
		}
		if ref == "" || (answer != "" && answer != kind) {
			return nil
		}
		if err := a.edit(ctx, thread, id.EventID(ref), msg); err != nil {
			return err
		}
		out = id.EventID(ref)
		if err := a.memory.SetDraftAnswer(ctx, req, kind); err != nil {
			a.logger.Warn("matrix: record what a draft became", "request", req, "err", err)
		}
		return nil
	})
	return out, err
}

// edit replaces the content of notice evt in thread's room with msg
// (m.replace; in an encrypted room the new content is encrypted with the
// rest, the relation beside it as the spec has it).
func (a *Adapter) edit(ctx context.Context, thread board.Thread, evt id.EventID, msg message) error {
	c := content(board.Thread{}, msg)
	c.SetEdit(evt)
	return a.call(ctx, "edit notice", func(ctx context.Context) error {
		_, err := a.cli.SendMessageEvent(ctx, id.RoomID(thread.Channel.ID), event.EventMessage, c)
		return err
	})
}

// redact takes back a notice BobNet should not have left, off the
// caller's path.
func (a *Adapter) redact(thread board.Thread, evt id.EventID) {
	a.async(func(ctx context.Context) {
		err := a.call(ctx, "redact notice", func(ctx context.Context) error {
			_, err := a.cli.RedactEvent(ctx, id.RoomID(thread.Channel.ID), evt, mautrix.ReqRedact{Reason: "a duplicate of another BobNet notice"})
			return err
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			a.logger.Warn("matrix: take back a duplicate notice", "event", evt, "err", err)
		}
	})
}
