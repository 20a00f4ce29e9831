package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// The Cancel button opens a modal asking why (optional), and the proposal
// is cancelled when it is submitted; closing the modal cancels nothing.
const (
	cancelCallback = "bobnet_cancel_modal"
	reasonBlock    = "reason"
	reasonInput    = "reason_input"
)

// cancelMeta is what the cancel modal carries back: the proposal and
// where its button was clicked.
type cancelMeta struct {
	// Proposal is parsed on the way back: the metadata is a client's
	// text like any other.
	Proposal string `json:"p"`
	Channel  string `json:"c"`
	Thread   string `json:"t"`
	Message  string `json:"m"`
}

// openCancel checks that user may cancel the proposal and opens the
// modal asking why, at once: the trigger id lives 3 s. A refusal is told
// to the clicker alone.
func (a *Adapter) openCancel(ctx context.Context, trigger string, id board.ProposalID, user, channel, message, thread string) {
	p, err := a.authorizeClick(ctx, id, user, channel, message)
	if err != nil {
		a.afterAck("refusal", func(ctx context.Context) { a.ephemeral(ctx, channel, thread, user, decisionText(err)) })
		return
	}
	api, _, err := a.web(ctx, channel)
	if err == nil {
		_, err = api.OpenViewContext(ctx, trigger, cancelModal(p, message, thread))
	}
	if err != nil {
		a.logger.Warn("open cancel modal", "proposal", id, "err", err)
	}
}

func cancelModal(p board.Proposal, message, thread string) slackapi.ModalViewRequest {
	input := textAnswer("e.g. the budget moved to next quarter", reasonInput, bot.MaxCancelReason)
	reason := slackapi.NewInputBlock(reasonBlock, plainText("Reason (optional)", 50), nil, input)
	reason.Optional = true
	return questionModal("Cancel the proposal", "Cancel proposal", "Keep it", cancelCallback,
		cancelMeta{Proposal: string(p.ID), Channel: p.Thread.Channel.ID, Thread: thread, Message: message},
		fmt.Sprintf("Cancel *%s* (v%d)? Nothing is created.", escape(boardName(p)), p.Version), reason)
}

// submitCancel handles the cancel modal's submission: a reason too long
// keeps the modal open with the field's error; otherwise the modal closes
// and the proposal is cancelled after the ack (a decision may take longer
// than Slack waits), a refusal told to the submitter alone.
func (a *Adapter) submitCancel(cb slackapi.InteractionCallback) map[string]any {
	var meta cancelMeta
	_ = json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta)
	reason, err := bot.CancelReason(cb.View.State.Values[reasonBlock][reasonInput].Value)
	if err != nil {
		return map[string]any{"response_action": "errors", "errors": map[string]string{
			reasonBlock: fmt.Sprintf("Keep the reason under %d characters.", bot.MaxCancelReason+1)}}
	}
	id, err := bot.ParseProposalID(meta.Proposal)
	if err != nil {
		return map[string]any{"response_action": "errors", "errors": map[string]string{reasonBlock: decisionText(err)}}
	}
	user := cb.User.ID
	if slackTenant(meta.Channel) != a.clickTenant(cb) {
		// Metadata naming another workspace's channel: as a proposal
		// nobody has, told to nobody.
		return map[string]any{"response_action": "errors", "errors": map[string]string{reasonBlock: decisionText(bot.ErrNoProposal)}}
	}
	a.afterAck("decision", func(ctx context.Context) {
		p, err := a.eng.Proposal(ctx, id)
		if err == nil {
			err = clickedWhereProposed(p, meta.Channel, meta.Message)
		}
		if err == nil {
			_, err = a.eng.CancelWithReason(ctx, id, user, reason)
		}
		if err != nil && meta.Channel != "" {
			a.ephemeral(ctx, meta.Channel, meta.Thread, user, decisionText(err))
		}
	})
	return nil
}

// cancelledLine is the redrawn preview's line for a cancelled proposal,
// with its reason when one was given.
func cancelledLine(p board.Proposal) string {
	line := fmt.Sprintf(":no_entry_sign: Cancelled by <@%s>", escape(p.DecidedBy))
	if p.Reason != "" {
		line += ": " + escape(p.Reason)
	}
	return line
}

// slackUser matches a Slack user id; reminders go to those only (the
// admins of BOBNET_ADMINS may name people of other surfaces).
var slackUser = regexp.MustCompile(`^[UW][A-Z0-9_]{2,}$`)

// Remind sends each decider a direct message with the proposal's title,
// the time left and a link to its preview. Roles are not expanded (see
// bot.Reminder); when no decider is a Slack user the reminder is a reply
// in the proposal's thread instead.
func (a *Adapter) Remind(ctx context.Context, r bot.Reminder) error {
	p := r.Proposal
	api, channel, err := a.web(ctx, p.Thread.Channel.ID)
	if err != nil {
		return fmt.Errorf("remind about %s: %w", p.ID, err)
	}
	where := "<#" + escape(channel) + ">"
	if p.Message != "" {
		link, err := api.GetPermalinkContext(ctx, &slackapi.PermalinkParameters{Channel: channel, Ts: string(p.Message)})
		if err != nil {
			a.logger.Warn("slack: permalink of a preview", "proposal", p.ID, "err", err)
		} else {
			where = "<" + link + "|in " + where + ">"
		}
	}
	text := fmt.Sprintf(":alarm_clock: Reminder: *%s* is waiting for your decision %s; it expires in %s.",
		escape(r.Title()), where, bot.LeftText(r.Left))
	var errs []error
	sent := 0
	for _, u := range r.Deciders {
		if !slackUser.MatchString(u) {
			continue
		}
		sent++
		_, _, err := api.PostMessageContext(ctx, u,
			slackapi.MsgOptionText(fallback("Reminder: "+r.Title()+" is waiting for your decision"), false),
			slackapi.MsgOptionBlocks(slackapi.NewSectionBlock(mrkdwn(text), nil, nil)))
		if err != nil {
			errs = append(errs, fmt.Errorf("remind %s: %w", u, err))
		}
	}
	if sent == 0 {
		return a.Reply(ctx, p.Thread, board.Reply{Kind: board.ReplyInfo, Text: r.Text()})
	}
	return errors.Join(errs...)
}
