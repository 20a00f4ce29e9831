package board

import "time"

// Delivery is one webhook delivery to record: the hook, the sender's
// delivery id, and the request it started: its id, and when it was
// received. The id is derived from the delivery (RequestIDFor), so a
// redelivery that got past Redis has it too; the time tells the two
// requests apart.
type Delivery struct {
	Hook       string
	ID         string
	RequestID  RequestID
	ReceivedAt time.Time
}

// DeliveryResult is what recording a delivery found: the request id of the
// delivery's first recording, whether this was it (IsNew), and whether
// that recording was this very request's (Own: its worker recorded it
// before a crash).
type DeliveryResult struct {
	RequestID RequestID
	IsNew     bool
	Own       bool
}
