package board

// Delivery is one webhook delivery to record: the hook, the sender's
// delivery id, and the request id it started.
type Delivery struct {
	Hook      string
	ID        string
	RequestID RequestID
}

// DeliveryResult is what recording a delivery found: the request id of the
// delivery's first recording, and whether this was it.
type DeliveryResult struct {
	RequestID RequestID
	IsNew     bool
}
