package board

import (
	"encoding/json"
	"time"
)

// ConsoleEvent is one thing shown in a web console channel, as the console
// numbered it.
type ConsoleEvent struct {
	ID   int64
	Type string
	At   time.Time
	Data json.RawMessage
}

// ChannelActivity is a console channel with its latest event.
type ChannelActivity struct {
	Channel string
	Events  int
	Latest  time.Time
	// LastType is the latest event's type (message, reply, proposal, …).
	LastType string
}
