package board

// OutboundEvent is an event for the callback outbox: one row per
// endpoint, each sent as Body with the webhook-id MsgID.
type OutboundEvent struct {
	MsgID     string
	Type      string
	Endpoints []string
	Body      []byte
}

// ClaimedEvent is one outbox row a sender has leased: what to send where,
// how often it was tried, and whether its endpoint answered 410 Gone
// before (then it is given up unsent). The store hands it to the outbox
// adapter, which may not import the store.
type ClaimedEvent struct {
	ID       int64
	MsgID    string
	Type     string
	Endpoint string
	Body     []byte
	Attempts int
	Disabled bool
}

// OutboxCounts are the outbox's rows by state, for tests and operators.
type OutboxCounts struct {
	Pending, Delivered, Failed int
}
