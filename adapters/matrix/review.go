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

// Reviews in Matrix: the notice announcing that a run's card waits in
// Review is recorded and seeded with ✅ and ↩️. ✅ accepts the card; ↩️
// asks for the reason, which is given with !bobnet sendback (a reaction
// carries no text). Once decided, the announcement is edited to say so.

// Reviews remembers which notice announced which run's card, so a
// reaction on it reviews that card and a decision edits it.
type Reviews interface {
	SaveMatrixReview(ctx context.Context, room, evt string, r board.MatrixReview) error
	MatrixReview(ctx context.Context, room, evt string) (board.MatrixReview, error)
	LatestMatrixReview(ctx context.Context, room string, run board.RunID, card board.CardID) (string, error)
}

// reviewSeeds are the reactions put on every review announcement.
var reviewSeeds = []string{"✅", "↩️"}

// reviewPosted keeps what a posted reply said of a review: an
// announcement is recorded and seeded with the review reactions; a
// decision edits its card's announcement.
func (a *Adapter) reviewPosted(ctx context.Context, t board.Thread, evt id.EventID, ref board.ReviewRef) {
	room := id.RoomID(t.Channel.ID)
	if ref.Decision != "" {
		a.reviewDecided(ctx, room, ref)
		return
	}
	// The notice is out: recording it gets a context of its own, since
	// the send may have used up the caller's.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.CallTimeout)
	err := a.store.SaveMatrixReview(sctx, string(room), string(evt), board.MatrixReview{
		Thread: t.ID, Run: ref.Run, Card: ref.Card, Handle: ref.Handle, Round: ref.Round,
	})
	cancel()
	if err != nil {
		// Reactions on it are not recognised; the commands still review.
		a.logger.Error("matrix: review announcement sent but not recorded", "run", ref.Run, "card", ref.Card, "event", evt, "err", err)
		return
	}
	for _, key := range reviewSeeds {
		if err := a.call(ctx, "seed reaction", func(ctx context.Context) error {
			_, err := a.cli.SendReaction(ctx, room, evt, key)
			return err
		}); err != nil {
			a.logger.Warn("matrix: seed review reaction", "card", ref.Card, "err", err)
			return
		}
	}
}

// reviewDecided edits the card's latest announcement to say who decided
// and how, so its reactions no longer invite a decision.
func (a *Adapter) reviewDecided(ctx context.Context, room id.RoomID, ref board.ReviewRef) {
	target, err := a.store.LatestMatrixReview(ctx, string(room), ref.Run, ref.Card)
	if err != nil {
		if !errors.Is(err, board.ErrNotFound) {
			a.logger.Warn("matrix: find review announcement", "card", ref.Card, "err", err)
		}
		return
	}
	text := fmt.Sprintf("%s was accepted by %s.", ref.Handle, ref.By)
	if ref.Decision == bot.ReviewSentBack {
		text = fmt.Sprintf("%s was sent back by %s: “%s”. It is worked again with that reason.", ref.Handle, ref.By, ref.Reason)
	}
	c := content(board.Thread{}, renderReply(board.Reply{Kind: board.ReplyInfo, Text: text}))
	c.SetEdit(id.EventID(target))
	if err := a.call(ctx, "edit review announcement", func(ctx context.Context) error {
		_, err := a.cli.SendMessageEvent(ctx, room, event.EventMessage, c)
		return err
	}); err != nil {
		a.logger.Warn("matrix: edit review announcement", "card", ref.Card, "err", err)
	}
}

// reviewReaction handles a reaction on a review announcement and reports
// whether it was one: ✅ (or ✔, 👍) accepts, ↩️ (or 🔙) asks for the
// reason. Reactions on other messages are left to the preview handling.
func (a *Adapter) reviewReaction(ctx context.Context, evt *event.Event, rel event.RelatesTo) bool {
	var accept bool
	switch reactionKey(rel.Key) {
	case "✅", "✔", "👍":
		accept = true
	case "↩", "🔙":
	default:
		return false
	}
	saved, err := a.store.MatrixReview(ctx, string(evt.RoomID), string(rel.EventID))
	if errors.Is(err, board.ErrNotFound) {
		return false
	}
	if err != nil {
		a.logger.Warn("matrix: find review announcement", "room", evt.RoomID, "event", rel.EventID, "err", err)
		return true
	}
	if !a.firstSeen(ctx, "reaction", evt.ID) {
		return true
	}
	ref := board.ReviewRef{Run: saved.Run, Card: saved.Card, Handle: saved.Handle, Round: saved.Round}
	t := board.Thread{Channel: channel(evt.RoomID), ID: saved.Thread}
	user := string(evt.Sender)
	a.async(func(ctx context.Context) { a.reviewByReaction(ctx, t, ref, user, accept) })
	return true
}

// reviewByReaction accepts the card, or asks for the reason to send it
// back; a refusal is said in the thread, once per person, card and kind.
func (a *Adapter) reviewByReaction(ctx context.Context, t board.Thread, ref board.ReviewRef, user string, accept bool) {
	_, err := a.eng.AuthorizeReview(ctx, ref, user)
	if err == nil && !accept {
		a.post(ctx, t, board.Reply{Kind: board.ReplyInfo, Text: fmt.Sprintf(
			"%s: say why %s goes back, in this thread: !bobnet sendback %s <why>. It is worked again with that reason.", user, ref.Handle, ref.Handle)})
		return
	}
	if err == nil {
		_, err = a.eng.ReviewRunCard(ctx, ref.Run, ref.Card, ref.Round, user, true, "")
	}
	if err == nil {
		return // the engine tells the thread; the announcement is edited
	}
	kind := "other"
	switch {
	case errors.Is(err, bot.ErrForbidden):
		kind = "forbidden"
	case errors.Is(err, board.ErrNotRunnable), errors.Is(err, bot.ErrStaleReview):
		kind = "decided"
	}
	key := fmt.Sprintf("review:%s:%s:%d:%s:%s", ref.Run, ref.Card, ref.Round, user, kind)
	if !a.firstSeen(ctx, "refused", id.EventID(key)) {
		return
	}
	a.post(ctx, t, board.Reply{Kind: board.ReplyInfo, Text: user + ": " + bot.Explain(err)})
}
