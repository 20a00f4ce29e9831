package board

// OutboundEvent is an event for the callback outbox: one row per
// endpoint, each sent as Body with the webhook-id MsgID.
type OutboundEvent struct {
	MsgID     string
	Type      string
	Endpoints []string
	Body      []byte
}
