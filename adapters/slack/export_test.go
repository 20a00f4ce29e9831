package slack

import (
	"context"

	"github.com/slack-go/slack/socketmode"
)

// Acker is what SocketEvent acknowledges envelopes with.
type Acker = acker

// SocketEvent hands one Socket Mode event to the adapter, as RunSocketMode
// does, acknowledging through client.
func (a *Adapter) SocketEvent(ctx context.Context, client Acker, evt socketmode.Event) {
	a.socketEvent(ctx, client, evt)
}
