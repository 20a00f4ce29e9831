package matrix

import (
	"context"
	"errors"
	"fmt"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// decide runs one decision and tells the user when it was refused.
func (a *Adapter) decide(ctx context.Context, thread board.Thread, act string, p board.ProposalID, user, feedback string) {
	var err error
	switch act {
	case "approve":
		var ap board.Approval
		ap, err = a.eng.Approve(ctx, p, user)
		if err == nil && ap.State == board.ProposalPending && ap.Needed > 1 {
			// The edited preview shows the count to the room; the
			// approver hears that their approval counted.
			a.post(ctx, thread, board.Reply{Kind: board.ReplyInfo, Text: fmt.Sprintf(
				"%s: your approval is recorded: %d of %d approvals. The board is created when the last one arrives.",
				user, len(ap.Approvals), ap.Needed)})
			return
		}
	case "cancel":
		_, err = a.eng.CancelWithReason(ctx, p, user, cancelReason(feedback)) // remind.go
	case "revise":
		_, err = a.eng.Revise(ctx, p, user, feedback)
	case "again":
		_, err = a.eng.ProposeAgain(ctx, p, user)
	case "withdraw":
		var wp board.Proposal
		if wp, err = a.eng.Withdraw(ctx, p, user); err == nil {
			a.post(ctx, thread, board.Reply{Kind: board.ReplyInfo, Text: fmt.Sprintf(
				"%s: your approval is withdrawn: %d of %d approvals now.", user, len(wp.Quorum.Approvals), wp.Quorum.Needed)})
			return
		}
	case "ask-feedback":
		if _, err = a.eng.Authorize(ctx, p, user); err == nil {
			a.post(ctx, thread, board.Reply{Kind: board.ReplyInfo, Text: user + ": what should change? Reply in this thread with !revise <what to change>."})
			return
		}
	}
	if err == nil || errors.Is(err, bot.ErrRateLimited) {
		return
	}
	// One short notice per person and proposal, however often they try.
	if !a.firstSeen(ctx, "refused", id.EventID(string(p)+":"+user+":"+refusal(err))) {
		return
	}
	a.post(ctx, thread, board.Reply{Kind: board.ReplyInfo, Text: user + ": " + decisionText(err)})
}

// refusal names the kind of a refused decision, so a later refusal of
// another kind (approved meanwhile) is still said.
func refusal(err error) string {
	var de *bot.DecidedError
	switch {
	case errors.As(err, &de):
		return "decided-" + string(de.State)
	case errors.Is(err, bot.ErrForbidden):
		return "forbidden"
	case errors.Is(err, bot.ErrExpired):
		return "expired"
	}
	return "other"
}

func (a *Adapter) onReaction(ctx context.Context, evt *event.Event) {
	if isOld(ctx, evt) || evt.Sender == a.cfg.UserID {
		return
	}
	rel := evt.Content.AsReaction().RelatesTo
	if rel.Type != event.RelAnnotation || a.reviewReaction(ctx, evt, rel) {
		return
	}
	var act string
	switch reactionKey(rel.Key) {
	case "✅", "✔", "👍":
		act = "approve"
	case "❌", "✖":
		act = "cancel"
	case "✏", "📝":
		act = "ask-feedback"
	case "🔁", "🔄":
		act = "again"
	default:
		return
	}
	p, err := a.store.MatrixPreviewProposal(ctx, string(evt.RoomID), string(rel.EventID))
	if err != nil {
		if !errors.Is(err, board.ErrNotFound) {
			a.logger.Warn("matrix: find preview", "room", evt.RoomID, "event", rel.EventID, "err", err)
		}
		return
	}
	if !a.firstSeen(ctx, "reaction", evt.ID) {
		return
	}
	thread, err := a.previewThread(ctx, evt.RoomID, p)
	if err != nil {
		a.logger.Warn("matrix: find preview thread", "proposal", p, "err", err)
		return
	}
	user := string(evt.Sender)
	a.async(func(ctx context.Context) { a.decide(ctx, thread, act, p, user, "") })
}

// previewThread is the thread a proposal's preview is in.
func (a *Adapter) previewThread(ctx context.Context, room id.RoomID, p board.ProposalID) (board.Thread, error) {
	t, err := a.store.MatrixPreviewThread(ctx, string(room), p)
	if err != nil {
		return board.Thread{}, err
	}
	return board.Thread{Channel: channel(room), ID: t}, nil
}

// decisionText is what a refused decision tells the person: bot.Explain's
// sentence, with the command that proposes an expired plan again.
func decisionText(err error) string {
	if errors.Is(err, bot.ErrExpired) {
		return bot.Explain(err) + " Reply !again in this thread to do so."
	}
	return bot.Explain(err)
}
