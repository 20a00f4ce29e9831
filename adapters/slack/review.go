package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// Review controls: the announcement that a runner's card waits in Review
// carries Accept and Send back; Send back opens a modal for the reason.
const (
	actionReviewAccept   = "bobnet_review_accept"
	actionReviewSendBack = "bobnet_review_sendback"
	sendBackCallback     = "bobnet_sendback_modal"
	sendBackBlock        = "sendback_reason"
	sendBackInput        = "sendback_reason_input"
)

// replyBlocks is a reply's message: its text, and under an announcement
// of a card to review, the Accept / Send back buttons.
func replyBlocks(text string, ref *board.ReviewRef) []slackapi.Block {
	blocks := []slackapi.Block{slackapi.NewSectionBlock(mrkdwn(text), nil, nil)}
	if ref == nil || ref.Decision != "" {
		return blocks
	}
	value := reviewValue(*ref)
	return append(blocks, slackapi.NewActionBlock("bobnet_review:"+string(ref.Card),
		slackapi.NewButtonBlockElement(actionReviewAccept, value, plainText("Accept", maxButtonText)).WithStyle(slackapi.StylePrimary),
		slackapi.NewButtonBlockElement(actionReviewSendBack, value, plainText("Send back", maxButtonText)),
	))
}

// reviewValue is a review button's value: run, card and round.
func reviewValue(ref board.ReviewRef) string {
	return string(ref.Run) + " " + string(ref.Card) + " " + strconv.Itoa(ref.Round)
}

// errBadReviewValue is a review button whose value names no card.
var errBadReviewValue = errors.New("review button names no card")

// parseReviewValue reads a review button's value back: it is a client's
// text like any other, so every part is checked.
func parseReviewValue(s string) (board.ReviewRef, error) {
	parts := strings.Fields(s)
	if len(parts) != 3 {
		return board.ReviewRef{}, errBadReviewValue
	}
	run, err := board.ParseRunID(parts[0])
	if err != nil {
		return board.ReviewRef{}, errBadReviewValue
	}
	card, err := board.ParseCardID(parts[1])
	if err != nil {
		return board.ReviewRef{}, errBadReviewValue
	}
	round, err := strconv.Atoi(parts[2])
	if err != nil || round < 0 {
		return board.ReviewRef{}, errBadReviewValue
	}
	return board.ReviewRef{Run: run, Card: card, Round: round}, nil
}

// reviewText is what a refused review click tells the clicker.
func reviewText(err error) string {
	switch {
	case errors.Is(err, errWrongPlace):
		return "That button does not belong to a card of this channel's runs; nothing was changed."
	case errors.Is(err, errBadReviewValue), errors.Is(err, bot.ErrNotFound):
		return "That button names no card under review; nothing was changed."
	}
	return escape(bot.Explain(err))
}

// reviewedWhereAnnounced checks that a click came from the channel the
// card was announced in: a payload naming another channel must not decide
// this channel's reviews.
// A card of another tenant's run is refused as one nobody has.
func reviewedWhereAnnounced(place bot.ReviewPlace, channel string) error {
	if bot.TenantOf(place.Thread.Channel) != slackTenant(channel) {
		return fmt.Errorf("run %s: %w", place.Run.ID, bot.ErrNoRun)
	}
	if place.Thread.Channel.Source != board.SourceSlack || place.Thread.Channel.ID != channel {
		return errWrongPlace
	}
	return nil
}

// reviewClick handles a click on a review button and reports whether the
// action was one. Accept decides after the ack; Send back checks the
// clicker now and opens the reason modal (its trigger id lives 3 s).
func (a *Adapter) reviewClick(ctx context.Context, cb slackapi.InteractionCallback, act *slackapi.BlockAction) bool {
	if act.ActionID != actionReviewAccept && act.ActionID != actionReviewSendBack {
		return false
	}
	user, channel := cb.User.ID, a.callbackChannel(cb)
	thread := cb.Message.ThreadTimestamp
	if thread == "" {
		thread = cb.Container.ThreadTs
	}
	message := cb.Message.Timestamp
	if message == "" {
		message = cb.Container.MessageTs
	}
	refuse := func(err error) {
		a.afterAck("review refusal", func(ctx context.Context) { a.ephemeral(ctx, channel, thread, user, reviewText(err)) })
	}
	ref, err := parseReviewValue(act.Value)
	if err != nil {
		refuse(err)
		return true
	}
	if act.ActionID == actionReviewAccept {
		a.afterAck("review", func(ctx context.Context) {
			a.review(ctx, ref, reviewMeta{Channel: channel, Message: message, Thread: thread}, user, true, "")
		})
		return true
	}
	place, err := a.eng.AuthorizeReview(ctx, ref, user)
	if werr := reviewedWhereAnnounced(place, channel); place.Run.ID != "" && werr != nil {
		err = werr
	}
	if err != nil {
		refuse(err)
		return true
	}
	meta := reviewMeta{Run: string(ref.Run), Card: string(ref.Card), Round: ref.Round, Channel: channel, Message: message, Thread: thread}
	api, _, err := a.web(ctx, channel)
	if err == nil {
		_, err = api.OpenViewContext(ctx, cb.TriggerID, sendBackModal(meta, place.Card))
	}
	if err != nil {
		a.logger.Warn("open send-back modal", "run", ref.Run, "card", ref.Card, "err", err)
	}
	return true
}

// reviewMeta is where a review was asked for, carried through the modal.
type reviewMeta struct {
	Run     string `json:"r,omitempty"`
	Card    string `json:"k,omitempty"`
	Round   int    `json:"n,omitempty"`
	Channel string `json:"c"`
	Message string `json:"m"`
	Thread  string `json:"t"`
}

func sendBackModal(meta reviewMeta, c board.RunCard) slackapi.ModalViewRequest {
	input := textAnswer("e.g. cite a source for every claim", sendBackInput, bot.MaxReviewReason)
	return questionModal("Send back", "Send back", "Cancel", sendBackCallback, meta,
		fmt.Sprintf("Why should *%s* “%s” be worked again? The reason goes to whoever works it next.", escape(c.Handle), escape(c.Title)),
		slackapi.NewInputBlock(sendBackBlock, plainText("Reason", 50), nil, input))
}

// submitSendBack handles the Send back modal's submission: Slack's
// response_action errors for a missing, too long or refused reason, nil
// (the modal closes) once the card is sent back.
func (a *Adapter) submitSendBack(ctx context.Context, cb slackapi.InteractionCallback) map[string]any {
	fieldError := func(text string) map[string]any {
		return map[string]any{"response_action": "errors", "errors": map[string]string{sendBackBlock: text}}
	}
	reason := strings.TrimSpace(cb.View.State.Values[sendBackBlock][sendBackInput].Value)
	switch {
	case reason == "":
		return fieldError("Say why it goes back: the reason is what it is worked again with.")
	case utf8.RuneCountInString(reason) > bot.MaxReviewReason:
		return fieldError(fmt.Sprintf("Keep the reason within %d characters.", bot.MaxReviewReason))
	}
	var meta reviewMeta
	_ = json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta)
	ref, err := parseReviewValue(meta.Run + " " + meta.Card + " " + strconv.Itoa(meta.Round))
	if err == nil && slackTenant(meta.Channel) != a.clickTenant(cb) {
		err = fmt.Errorf("run %s: %w", ref.Run, bot.ErrNoRun)
	}
	if err == nil {
		err = a.review(ctx, ref, meta, cb.User.ID, false, reason)
	}
	if err != nil {
		return fieldError(reviewText(err))
	}
	return nil
}

// review decides a review clicked in channel and redraws the
// announcement. Only the decision that moved the card redraws it: a
// second click finds the card out of Review and is refused. A refused
// accept tells the clicker; a refused send back is returned for the
// modal to show.
func (a *Adapter) review(ctx context.Context, ref board.ReviewRef, at reviewMeta, user string, accept bool, reason string) error {
	place, err := a.eng.AuthorizeReview(ctx, ref, user)
	if place.Run.ID != "" {
		if werr := reviewedWhereAnnounced(place, at.Channel); werr != nil {
			a.logger.Warn("slack review refused: not where its card was announced", "run", ref.Run, "channel", at.Channel)
			err = werr
		}
	}
	var up board.CardUpdate
	if err == nil {
		up, err = a.eng.ReviewRunCard(ctx, ref.Run, ref.Card, ref.Round, user, accept, reason)
	}
	if err != nil {
		if accept {
			a.ephemeral(ctx, at.Channel, at.Thread, user, reviewText(err))
		}
		return err
	}
	line := fmt.Sprintf(":white_check_mark: *%s* “%s” was accepted by <@%s>.", escape(up.Card.Handle), escape(up.Card.Title), escape(user))
	plainLine := fmt.Sprintf("%s “%s” was accepted.", up.Card.Handle, up.Card.Title)
	if !accept {
		line = fmt.Sprintf(":leftwards_arrow_with_hook: *%s* “%s” was sent back by <@%s>: “%s”. It is worked again with that reason.",
			escape(up.Card.Handle), escape(up.Card.Title), escape(user), escape(reason))
		plainLine = fmt.Sprintf("%s “%s” was sent back: “%s”.", up.Card.Handle, up.Card.Title, reason)
	}
	if at.Message == "" {
		return nil
	}
	// The decision stands whatever becomes of the redraw; it gets a
	// context of its own, as the modal's answer must not wait on it.
	a.afterAck("redraw review", func(ctx context.Context) {
		api, channel, err := a.web(ctx, at.Channel)
		if err == nil {
			_, _, _, err = api.UpdateMessageContext(ctx, channel, at.Message,
				slackapi.MsgOptionText(fallback(plainLine), false),
				slackapi.MsgOptionBlocks(slackapi.NewSectionBlock(mrkdwn(line), nil, nil),
					contextBlock(fmt.Sprintf("<%s|The run page>", bot.RunURL(a.cfg.PublicURL, place.Run)))))
		}
		if err != nil {
			a.logger.Warn("redraw review", "run", ref.Run, "card", ref.Card, "err", err)
		}
	})
	return nil
}
