package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// decisionText is what a refused click tells the clicker: bot.Explain's
// sentence in mrkdwn, naming a decider with a mention.
func decisionText(err error) string {
	var de *bot.DecidedError
	switch {
	case errors.Is(err, errWrongPlace):
		return "That button does not belong to a proposal of this channel; nothing was changed."
	case errors.As(err, &de) && de.By != "" && de.Other == "":
		return fmt.Sprintf("This proposal was already %s by <@%s>.", de.State, escape(de.By))
	}
	return escape(bot.Explain(err))
}

func (a *Adapter) interactivity(w http.ResponseWriter, r *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("payload") == "" {
		http.Error(w, "missing payload", http.StatusBadRequest)
		return
	}
	var cb slackapi.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		http.Error(w, "invalid payload", http.StatusBadRequest)
		return
	}
	switch cb.Type {
	case slackapi.InteractionTypeBlockActions, slackapi.InteractionTypeMessageAction:
		a.blockActions(r.Context(), cb)
		w.WriteHeader(http.StatusOK)
	case slackapi.InteractionTypeViewSubmission:
		a.viewSubmission(w, r.Context(), cb)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// blockActions handles button clicks. The button's value is only a
// proposal id: who may do what is checked again by the engine, and a
// second click finds the proposal decided and is told so.
func (a *Adapter) blockActions(ctx context.Context, cb slackapi.InteractionCallback) {
	if a.interaction(ctx, cb) {
		return // the "Plan this" shortcut and the App Home: shortcut.go
	}
	user, channel := cb.User.ID, a.callbackChannel(cb)
	thread := cb.Message.ThreadTimestamp
	if thread == "" {
		thread = cb.Container.ThreadTs
	}
	for _, act := range cb.ActionCallback.BlockActions {
		if a.reviewClick(ctx, cb, act) {
			continue
		}
		switch act.ActionID {
		case actionRevise, actionApprove, actionCancel, actionProposeAgain, actionWithdraw:
		default:
			continue
		}
		// A malformed value names no proposal: the clicker is told so,
		// as for a proposal that is gone.
		id, err := bot.ParseProposalID(act.Value)
		if err != nil {
			a.afterAck("refusal", func(ctx context.Context) { a.ephemeral(ctx, channel, thread, user, decisionText(err)) })
			continue
		}
		message := cb.Message.Timestamp
		if message == "" {
			message = cb.Container.MessageTs
		}
		switch act.ActionID {
		case actionRevise:
			// The trigger id lives 3 s: check and open the modal now.
			p, err := a.authorizeClick(ctx, id, user, channel, message)
			if err != nil {
				a.afterAck("refusal", func(ctx context.Context) { a.ephemeral(ctx, channel, thread, user, decisionText(err)) })
				continue
			}
			api, _, err := a.web(ctx, channel)
			if err == nil {
				_, err = api.OpenViewContext(ctx, cb.TriggerID, reviseModal(p))
			}
			if err != nil {
				a.logger.Warn("open revise modal", "proposal", id, "err", err)
			}
		case actionCancel:
			a.openCancel(ctx, cb.TriggerID, id, user, channel, message, thread) // cancel.go
		case actionApprove, actionProposeAgain, actionWithdraw:
			// A decision writes Postgres and posts; finish it after the
			// ack, bounded by the server's lifetime rather than this
			// request's.
			action := act.ActionID
			a.afterAck("decision", func(ctx context.Context) { a.decide(ctx, action, id, user, channel, message, thread) })
		}
	}
}

// errWrongPlace is a click whose payload names another channel or message
// than the one its proposal was posted to.
var errWrongPlace = errors.New("click from another channel or message")

// clickedWhereProposed checks that a click came from the channel (and
// message) the proposal was posted to: a payload naming another channel
// must not decide this channel's proposals.
//
// A proposal of another tenant (another workspace, a Matrix room, the
// console) is refused as a proposal nobody has: nothing about it, not
// even that it exists.
func clickedWhereProposed(p board.Proposal, channel, message string) error {
	if bot.TenantOf(p.Thread.Channel) != slackTenant(channel) {
		return fmt.Errorf("proposal %s: %w", p.ID, bot.ErrNoProposal)
	}
	if p.Thread.Channel.Source != board.SourceSlack || p.Thread.Channel.ID != channel {
		return errWrongPlace
	}
	// The message is known once the preview's post is recorded, a moment
	// after it went out; until then the channel is what is checked (and
	// the clicker's right to decide, by the engine).
	if p.Message != "" && message != "" && string(p.Message) != message {
		return errWrongPlace
	}
	return nil
}

// authorizeClick checks a click that opens a modal: where it came from
// first (a proposal of another workspace is one nobody has, whoever
// clicks), then whether the clicker may decide.
func (a *Adapter) authorizeClick(ctx context.Context, id board.ProposalID, user, channel, message string) (board.Proposal, error) {
	p, err := a.eng.Proposal(ctx, id)
	if err == nil {
		err = clickedWhereProposed(p, channel, message)
	}
	if err != nil {
		return board.Proposal{}, err
	}
	return a.eng.Authorize(ctx, id, user)
}

func (a *Adapter) decide(ctx context.Context, action string, id board.ProposalID, user, channel, message, thread string) {
	p, err := a.eng.Proposal(ctx, id)
	if err == nil {
		err = clickedWhereProposed(p, channel, message)
	}
	if err != nil {
		if errors.Is(err, errWrongPlace) {
			a.logger.Warn("slack click refused: not where its proposal was posted", "proposal", id, "channel", channel)
		}
		a.ephemeral(ctx, channel, thread, user, decisionText(err))
		return
	}
	switch action {
	case actionApprove:
		var ap board.Approval
		if ap, err = a.eng.Approve(ctx, id, user); err == nil && ap.State == board.ProposalPending {
			a.ephemeral(ctx, channel, thread, user, approvalText(ap))
		}
	case actionProposeAgain:
		var rid board.RequestID
		if rid, err = a.eng.ProposeAgain(ctx, id, user); err == nil {
			a.showPlanning(p.Thread, rid, user, "")
		}
	case actionWithdraw:
		err = a.withdraw(ctx, id, user, channel, thread)
	}
	if err != nil {
		a.ephemeral(ctx, channel, thread, user, decisionText(err))
	}
}
