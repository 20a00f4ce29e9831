package board

import "time"

// Admission is a request offered to the request store, with the keys that
// decide whether it is taken in.
type Admission struct {
	Record RequestRecord
	// DedupeKey, when set, makes admission idempotent for DedupeTTL.
	DedupeKey string
	DedupeTTL time.Duration
	// UserKey and ChannelKey name the rate-limit counters.
	UserKey      string
	UserLimit    RateLimit
	ChannelKey   string
	ChannelLimit RateLimit
	// ChannelNotices caps how many throttled people of one channel are
	// told so per channel window.
	ChannelNotices int
	// QuietDuplicates says the caller answers a duplicate as it answers a
	// throttled request (Slack: 200 and nothing more), so while the
	// request's channel is known to be throttled, with its notices used up
	// for the window, the store may refuse it without reading its dedupe
	// key.
	QuietDuplicates bool
	Now             time.Time
}

// AdmitOutcome says what admission did with a request.
type AdmitOutcome string

// Admission outcomes.
const (
	AdmitNew       AdmitOutcome = "new"       // stored and queued
	AdmitDuplicate AdmitOutcome = "duplicate" // its dedupe key was seen: RequestID is the first request
	AdmitThrottled AdmitOutcome = "throttled" // over a rate limit: nothing stored
)

// AdmitResult is the outcome of one admission.
type AdmitResult struct {
	Outcome   AdmitOutcome
	RequestID RequestID
	// Limit is "user" or "channel" when throttled.
	Limit string
	// Notify is set when the throttled person should be told (once per
	// window, and only a few people per channel window).
	Notify bool
}

// QueuedRequest is one request handed to a worker by the queue.
type QueuedRequest struct {
	// MessageID is the queue's id for acknowledging it.
	MessageID string
	RequestID RequestID
	// Count is how many times the queue has handed the entry to a worker,
	// this time included (0 when the queue does not say): past
	// MaxDeliveries the request is given up on.
	Count int
	// Record is the request's record as the queue read it when it handed
	// the entry over, in the same round trip; nil when it did not, and
	// the worker reads it.
	Record *RequestRecord
}

// RateLimit allows N requests per window Per; N == 0 means unlimited.
type RateLimit struct {
	N   int
	Per time.Duration
}
