package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
)

// reviseMeta is what the modal carries back.
type reviseMeta struct {
	// Proposal is parsed on the way back: the metadata is a client's
	// text like any other.
	Proposal string `json:"p"`
	Channel  string `json:"c"`
	Thread   string `json:"t"`
}

func reviseModal(p board.Proposal) slackapi.ModalViewRequest {
	input := textAnswer("e.g. add a card for an RSS feed; give the design QA to a Coder", feedbackInput, 0)
	return questionModal("Revise the plan", "Re-plan", "Cancel", reviseCallback,
		reviseMeta{Proposal: string(p.ID), Channel: p.Thread.Channel.ID, Thread: p.Thread.ID},
		fmt.Sprintf("What should change in *%s* (v%d)?", escape(boardName(p)), p.Version),
		slackapi.NewInputBlock(feedbackBlock, plainText("Feedback", 50), nil, input))
}

// questionModal is a modal that asks one question (mrkdwn) with one
// answer block, under title, with submit and dismiss (close) buttons;
// meta rides along as the private metadata its submission carries back.
func questionModal(title, submit, dismiss, callbackID string, meta any, question string, answer *slackapi.InputBlock) slackapi.ModalViewRequest {
	raw, _ := json.Marshal(meta)
	return slackapi.ModalViewRequest{
		Type:            slackapi.VTModal,
		Title:           plainText(title, 24),
		Submit:          plainText(submit, 24),
		Close:           plainText(dismiss, 24),
		CallbackID:      callbackID,
		PrivateMetadata: string(raw),
		Blocks: slackapi.Blocks{BlockSet: []slackapi.Block{
			slackapi.NewSectionBlock(mrkdwn(question), nil, nil),
			answer,
		}},
	}
}

// textAnswer is a multi-line text input with placeholder, of at most max
// characters (0: Slack's own limit).
func textAnswer(placeholder, actionID string, max int) *slackapi.PlainTextInputBlockElement {
	input := slackapi.NewPlainTextInputBlockElement(plainText(placeholder, 150), actionID)
	input.Multiline = true
	input.MaxLength = max
	return input
}

func boardName(p board.Proposal) string {
	if b := p.Plan.NewBoard(); b != nil {
		return b.Name
	}
	return "the plan"
}

func (a *Adapter) viewSubmission(w http.ResponseWriter, ctx context.Context, cb slackapi.InteractionCallback) {
	if resp := a.submitView(ctx, cb); resp != nil {
		httpjson.Write(w, http.StatusOK, resp)
		return
	}
	w.WriteHeader(http.StatusOK) // closes the modal; the new preview follows in the thread
}

// submitView handles the Revise modal's submission and returns Slack's
// response_action, or nil to close the modal. Shared by HTTP and Socket
// Mode (where the answer travels in the ack).
func (a *Adapter) submitView(ctx context.Context, cb slackapi.InteractionCallback) map[string]any {
	if cb.View.CallbackID == sendBackCallback {
		return a.submitSendBack(ctx, cb) // review.go
	}
	if cb.View.CallbackID == cancelCallback {
		return a.submitCancel(cb) // cancel.go
	}
	if cb.View.CallbackID != reviseCallback {
		return nil
	}
	var meta reviseMeta
	_ = json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta)
	feedback := strings.TrimSpace(cb.View.State.Values[feedbackBlock][feedbackInput].Value)
	if feedback == "" {
		return map[string]any{"response_action": "errors", "errors": map[string]string{feedbackBlock: "Say what should change."}}
	}
	id, err := bot.ParseProposalID(meta.Proposal)
	var p board.Proposal
	if err == nil && slackTenant(meta.Channel) != a.clickTenant(cb) {
		err = fmt.Errorf("proposal %s: %w", id, bot.ErrNoProposal)
	}
	if err == nil {
		p, err = a.eng.Proposal(ctx, id)
	}
	if err == nil {
		err = clickedWhereProposed(p, meta.Channel, "")
	}
	if err == nil {
		var rid board.RequestID
		if rid, err = a.eng.Revise(ctx, id, cb.User.ID, feedback); err == nil {
			a.showPlanning(p.Thread, rid, cb.User.ID, cb.Team.ID)
		}
	}
	if err != nil {
		return map[string]any{"response_action": "errors", "errors": map[string]string{feedbackBlock: decisionText(err)}}
	}
	return nil
}
