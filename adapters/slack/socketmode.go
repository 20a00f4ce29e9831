package slack

import (
	"context"
	"encoding/json"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// RunSocketMode connects to Slack over Socket Mode (SLACK_APP_TOKEN) and
// serves events, clicks and commands with the same handlers as HTTP mode,
// until ctx is done. Socket Mode redeliveries carry no retry headers;
// events are deduplicated by event id like HTTP ones.
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

func (a *Adapter) socketEvent(ctx context.Context, client *socketmode.Client, evt socketmode.Event) {
	if evt.Request == nil {
		return // connection lifecycle events
	}
	req := *evt.Request
	switch evt.Type {
	case socketmode.EventTypeEventsAPI:
		// Acked first: Socket Mode wants it within 3 s. A redelivery
		// carries the same event id, which the engine's intake dedupes.
		_ = client.Ack(req)
		var env eventEnvelope
		if err := json.Unmarshal(req.Payload, &env); err != nil {
			a.logger.Warn("socket mode event", "err", err)
			return
		}
		if err := a.handleEvent(ctx, env); err != nil {
			a.logger.Warn("socket mode event", "event_id", env.EventID, "err", err)
		}
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
		}
		if err := json.Unmarshal(req.Payload, &cmd); err != nil {
			_ = client.Ack(req)
			return
		}
		_ = client.Ack(req, a.command(ctx, cmd.ChannelID, cmd.UserID, cmd.Text, cmd.TriggerID))
	default:
		_ = client.Ack(req)
	}
}
