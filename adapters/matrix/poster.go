package matrix

import (
	"context"
	"fmt"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
)

// The poster side: the engine calls these from its workers, on any
// replica. Each call is bounded by the call timeout and honours rate
// limits.

// Previews remembers the previews BobNet posted and the threads it speaks
// in, so a reaction on a preview or a command in its thread finds the
// proposal, and plain replies in those threads count as requests.
type Previews interface {
	SaveMatrixPreview(ctx context.Context, room, evt, thread string, proposal board.ProposalID) error
	MatrixPreviewProposal(ctx context.Context, room, evt string) (board.ProposalID, error)
	MatrixThreadProposal(ctx context.Context, room, thread string) (board.ProposalID, error)
	MatrixPreviewThread(ctx context.Context, room string, proposal board.ProposalID) (string, error)
	SaveMatrixThread(ctx context.Context, room, thread string) error
	IsMatrixThread(ctx context.Context, room, thread string) (bool, error)
}

// seeded are the reactions put on every preview, so deciding is one tap.
var seeded = []string{"✅", "✏️", "❌"}

// content is a notice in a thread rooted at the request. m.mentions is
// present and empty: nothing BobNet posts pings anyone, whatever the text.
func content(thread board.Thread, msg message) *event.MessageEventContent {
	c := &event.MessageEventContent{
		MsgType: event.MsgNotice, Body: msg.Plain, Format: event.FormatHTML, FormattedBody: msg.HTML,
		Mentions: &event.Mentions{},
	}
	if thread.ID != "" {
		root := id.EventID(thread.ID)
		c.RelatesTo = (&event.RelatesTo{}).SetThread(root, root)
	}
	return c
}

// send posts msg in thread and remembers the thread as one BobNet speaks
// in, so plain replies there count as requests. In encrypted rooms the
// notice is encrypted unless opts says DontEncrypt.
func (a *Adapter) send(ctx context.Context, thread board.Thread, msg message, opts ...mautrix.ReqSendEvent) (id.EventID, error) {
	room := id.RoomID(thread.Channel.ID)
	var evt id.EventID
	err := a.call(ctx, "send notice", func(ctx context.Context) error {
		resp, err := a.cli.SendMessageEvent(ctx, room, event.EventMessage, content(thread, msg), opts...)
		if err == nil {
			evt = resp.EventID
		}
		return err
	})
	if err != nil {
		return "", err
	}
	if thread.ID != "" {
		if err := a.store.SaveMatrixThread(ctx, string(room), thread.ID); err != nil {
			a.logger.Warn("matrix: remember thread", "err", err)
		}
	}
	return evt, nil
}

// Reply posts a text reply as a notice in the thread; the reply that
// answers a request whose draft was drawn replaces the draft instead.
func (a *Adapter) Reply(ctx context.Context, t board.Thread, r board.Reply) error {
	msg := renderReply(r)
	evt, err := a.answerDraft(ctx, r.Request, t, msg, answerReply)
	if err != nil {
		return err
	}
	if evt == "" {
		evt, err = a.send(ctx, t, msg)
	}
	if err == nil && r.Review != nil {
		a.reviewPosted(ctx, t, evt, *r.Review)
	}
	return err
}

// PostPreview posts a pending proposal's preview in its thread, or
// turns the request's draft into it, and seeds the ✅ ✏️ ❌ reactions. The
// preview's event is the one people react to: the draft's, when there
// was one, since a reaction relates to the event first sent, not to its
// edits.
func (a *Adapter) PostPreview(ctx context.Context, p board.Proposal) (board.MessageRef, error) {
	msg := renderPreview(p, a.cfg.PublicURL)
	evt, err := a.answerDraft(ctx, p.RequestID, p.Thread, msg, answerPreview)
	if err == nil && evt == "" {
		evt, err = a.send(ctx, p.Thread, msg)
	}
	if err != nil {
		return "", fmt.Errorf("post preview: %w", err)
	}
	room := id.RoomID(p.Thread.Channel.ID)
	// The preview is out: from here on nothing fails the post, or the
	// engine would post a second preview. Recording it gets a context of
	// its own, since the send may have used up the caller's.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.CallTimeout)
	err = a.store.SaveMatrixPreview(sctx, string(room), string(evt), p.Thread.ID, p.ID)
	cancel()
	if err != nil {
		// Reactions on this preview are not recognised; the commands in
		// the thread still decide it.
		a.logger.Error("matrix: preview sent but not recorded", "proposal", p.ID, "event", evt, "err", err)
	}
	for _, key := range seeded {
		if err := a.call(ctx, "seed reaction", func(ctx context.Context) error {
			_, err := a.cli.SendReaction(ctx, room, evt, key)
			return err
		}); err != nil {
			// The commands in the thread still work without them.
			a.logger.Warn("matrix: seed reaction", "proposal", p.ID, "err", err)
			break
		}
	}
	return board.MessageRef(evt), nil
}

// UpdatePreview edits a decided preview (m.replace) to say what became of
// it: approved by whom with the board link, cancelled, superseded, or
// expired with how to propose it again.
func (a *Adapter) UpdatePreview(ctx context.Context, p board.Proposal) error {
	target := id.EventID(p.Message)
	if target == "" {
		// The engine redraws a preview it could not find once the post
		// has returned its id.
		return nil
	}
	return a.edit(ctx, p.Thread, target, renderPreview(p, a.cfg.PublicURL))
}
