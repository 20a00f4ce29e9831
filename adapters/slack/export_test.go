package slack

import (
	"context"

	"github.com/slack-go/slack/socketmode"

	"github.com/bobnet/bobnet/board"
)

// Acker is what SocketEvent acknowledges envelopes with.
type Acker = acker

// SocketEvent hands one Socket Mode event to the adapter, as RunSocketMode
// does, acknowledging through client.
func (a *Adapter) SocketEvent(ctx context.Context, client Acker, evt socketmode.Event) {
	a.socketEvent(ctx, client, evt)
}

// ShowPlanning shows that request id is being planned in t, as a
// mention's ack does.
func (a *Adapter) ShowPlanning(t board.Thread, id board.RequestID, user, team string) {
	a.showPlanning(t, id, user, team)
}
