package slack

import (
	"context"
	"encoding/json"
	"errors"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/bobnet/bobnet/bot"
)

// RunSocketMode connects to Slack over Socket Mode (SLACK_APP_TOKEN) and
// serves events, clicks and commands with the same handlers as HTTP mode,
// until ctx is done. Socket Mode redeliveries carry no retry headers;
// events are deduplicated by event id like HTTP ones. An event is acked
// after its request is queued, never before, so one that could not be
// queued is redelivered rather than lost.
func (a *Adapter) RunSocketMode(ctx context.Context) error {
	client := socketmode.New(a.api)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case evt, ok := <-client.Events:
				if !ok {
					return
				}
				a.socketEvent(ctx, client, evt)
			}
		}
	}()
	return client.RunContext(ctx)
}

// acker acknowledges Socket Mode envelopes; *socketmode.Client is one.
type acker interface {
	Ack(req socketmode.Request, payload ...any) error
}

func (a *Adapter) socketEvent(ctx context.Context, client acker, evt socketmode.Event) {
	if evt.Request == nil {
		return // connection lifecycle events
	}
	req := *evt.Request
	switch evt.Type {
	case socketmode.EventTypeEventsAPI:
		// Acked only once the request is queued (handling only enqueues,
		// well within Slack's 3 s): an envelope left unacked because Redis
		// is down is delivered again, as HTTP mode's 503 makes Slack
		// retry, and the redelivery's event id is deduped by the engine.
		var env eventEnvelope
		if err := json.Unmarshal(req.Payload, &env); err != nil {
			a.logger.Warn("socket mode event", "err", err)
			_ = client.Ack(req) // redelivering it would not parse either
			return
		}
		if err := a.handleEvent(ctx, env); err != nil {
			a.logger.Warn("socket mode event", "event_id", env.EventID, "err", err)
			if errors.Is(err, bot.ErrUnavailable) {
				return // not acked: Slack delivers it again
			}
		}
		_ = client.Ack(req)
	case socketmode.EventTypeInteractive:
		var cb slackapi.InteractionCallback
		if err := json.Unmarshal(req.Payload, &cb); err != nil {
			_ = client.Ack(req)
			return
		}
		if cb.Type != slackapi.InteractionTypeViewSubmission {
			_ = client.Ack(req)
			a.blockActions(ctx, cb)
			return
		}
		// A view submission's answer (errors or close) goes in the ack.
		if resp := a.submitView(ctx, cb); resp != nil {
			_ = client.Ack(req, resp)
		} else {
			_ = client.Ack(req)
		}
	case socketmode.EventTypeSlashCommand:
		var cmd struct {
			ChannelID string `json:"channel_id"`
			UserID    string `json:"user_id"`
			Text      string `json:"text"`
			TriggerID string `json:"trigger_id"`
			TeamID    string `json:"team_id"`
			// EnterpriseID and IsEnterpriseInstall name an org-wide
			// install; the flag is a string, as in HTTP mode's form.
			EnterpriseID        string `json:"enterprise_id"`
			IsEnterpriseInstall string `json:"is_enterprise_install"`
		}
		if err := json.Unmarshal(req.Payload, &cmd); err != nil {
			_ = client.Ack(req)
			return
		}
		channel, ok := a.commandChannel(ctx, cmd.TeamID, cmd.EnterpriseID, cmd.IsEnterpriseInstall, cmd.ChannelID)
		if !ok {
			_ = client.Ack(req, notInstalled)
			return
		}
		_ = client.Ack(req, a.command(ctx, channel, cmd.UserID, cmd.Text, cmd.TriggerID))
	default:
		_ = client.Ack(req)
	}
}
