package board

// The records the engine (package bot) trades with its Redis store and its
// surfaces: requests, channels, threads and replies here; their admission
// in admission.go; pending proposals with their changes and quorum in
// pending.go.

import (
	"time"

	"github.com/bobnet/bobnet/plan"
)

// Source names the surface a request came from.
type Source string

// The surfaces BobNet speaks on.
const (
	SourceSlack   Source = "slack"
	SourceMatrix  Source = "matrix"
	SourceConsole Source = "console"
)

// Channel is a conversation place on one surface.
type Channel struct {
	Source Source `json:"source"`
	ID     string `json:"id"`
}

// Key is the channel's name across surfaces, used for bindings, rate limits
// and audit: "slack:C123", "console:general".
func (c Channel) Key() string { return string(c.Source) + ":" + c.ID }

// ValidConsoleName reports whether name can name a console channel: 1 to
// 64 lower-case letters, digits, - or _, starting with a letter or digit.
// It is part of the console's URLs, and of a hook's channel,
// console:hook-NAME.
func ValidConsoleName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

// Thread is where replies to a request go.
type Thread struct {
	Channel Channel `json:"channel"`
	// ID is the platform's thread id (Slack thread_ts, Matrix thread root
	// event id); empty means the thread is rooted at the request itself.
	ID string `json:"id"`
}

// MessageRef is the platform's id of a message the bot posted (Slack ts,
// Matrix event id), so the message can be updated later.
type MessageRef string

// Request is one thing someone asked the bot.
type Request struct {
	ID     RequestID `json:"id"`
	Thread Thread    `json:"thread"`
	User   string    `json:"user"` // platform user id
	// UserName is how to show the user; empty means use User.
	UserName string `json:"user_name,omitempty"`
	Text     string `json:"text"`
	// DedupeKey (e.g. a Slack event id or webhook delivery id) makes Submit
	// idempotent: a second request with the same key returns the first id.
	DedupeKey string `json:"dedupe_key,omitempty"`
	// Revises and Feedback are set for a revision of a proposal.
	Revises  ProposalID `json:"revises,omitempty"`
	Feedback string     `json:"feedback,omitempty"`
	// Again is set when an expired proposal is proposed again.
	Again ProposalID `json:"again,omitempty"`
	// Quoted are chat messages the request is about ("Plan this"), shown
	// to the model as fenced thread history, never as the instruction.
	Quoted []plan.Turn `json:"quoted,omitempty"`
	// Via is the credential the request came through (a token, a hook
	// delivery), for the audit log; Submit takes it from the context.
	Via string `json:"via,omitempty"`
	// Webhook names the webhook delivery the request came from; the worker
	// records it in Postgres when it takes the request, and closes a
	// delivery seen there before as a duplicate.
	Webhook    *HookOrigin `json:"webhook,omitempty"`
	ReceivedAt time.Time   `json:"received_at"`
}

// HookOrigin is the webhook delivery a request came from: the hook's name
// and the sender's id of the delivery.
type HookOrigin struct {
	Hook string `json:"hook"`
	ID   string `json:"id"`
}

// RequestState is where a request is in its life.
type RequestState string

// Request states, as the REST API shows them.
const (
	RequestQueued   RequestState = "queued"
	RequestPlanning RequestState = "planning"
	RequestDone     RequestState = "done"
	RequestFailed   RequestState = "failed"
)

// ReplyKind says what kind of text reply the bot gave.
type ReplyKind string

// Reply kinds: the planner's three text kinds plus the bot's own.
const (
	ReplyAnswer   ReplyKind = "answer"
	ReplyClarify  ReplyKind = "clarify"
	ReplyRefuse   ReplyKind = "refuse"
	ReplyError    ReplyKind = "error" // friendly error: model unreachable, invalid output…
	ReplySlowDown ReplyKind = "slow_down"
	ReplyProposal ReplyKind = "proposal" // a preview was posted
	ReplyInfo     ReplyKind = "info"     // audit lines, board links, help
)

// Reply is a text message in a thread. Text is plain text written by the
// bot or the model; posters escape it for their surface.
type Reply struct {
	Kind ReplyKind `json:"kind"`
	Text string    `json:"text"`
	// Questions are the model's clarifying questions, if any.
	Questions []string `json:"questions,omitempty"`
	// BoardURL is set on the reply that announces a created board.
	BoardURL string     `json:"board_url,omitempty"`
	Review   *ReviewRef `json:"review,omitempty"` // a run's card under review, for posters' controls
	// Request is the request this reply answers, when it answers one: a
	// surface that drew the request's draft turns the draft into this
	// reply.
	Request RequestID `json:"request,omitempty"`
}

// ReviewRef names a runner's card in Review in one run. It rides on the
// Reply that announces the card (Decision empty), so a poster can draw
// Accept / Send back controls beside the text, and on the Reply that says
// how its review ended (Decision set), so a poster can take its controls
// away. A poster that draws no controls shows Reply.Text alone, which says
// the commands.
type ReviewRef struct {
	Run    RunID  `json:"run_id"`
	Card   CardID `json:"card_id"`
	Handle string `json:"handle"`
	// Round is how often the card had been sent back when it was
	// announced: controls of an earlier round decide nothing.
	Round int `json:"round"`
	// Decision is ReviewAccepted or ReviewSentBack once decided; By is
	// who decided and Reason why it was sent back.
	Decision string `json:"decision,omitempty"`
	By       string `json:"by,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// RequestStatus is what GET /api/v1/requests/{id} shows.
type RequestStatus struct {
	ID         RequestID    `json:"id"`
	State      RequestState `json:"state"`
	Reply      *Reply       `json:"reply,omitempty"`
	ProposalID ProposalID   `json:"proposal_id,omitempty"`
	Error      string       `json:"error,omitempty"`
	// DuplicateOf is set on a webhook redelivery closed by its worker: the
	// request the delivery started the first time.
	DuplicateOf RequestID `json:"duplicate_of,omitempty"`
}

// RequestRecord is a request with where it stands, as the request store
// keeps it.
type RequestRecord struct {
	Request Request       `json:"request"`
	Status  RequestStatus `json:"status"`
	// Taken is set once a worker has recorded the request as taken, so a
	// worker that takes it again after a crash does not start over.
	Taken bool `json:"taken,omitempty"`
	// Answer is the planned answer, kept until it is posted: a request
	// whose answer was planned but never posted is answered after a
	// restart without asking the model again.
	Answer *Answer `json:"answer,omitempty"`
}

// Answer is what the bot will say to a request: a text reply or the
// preview of a proposal. Failure is set when the request failed.
type Answer struct {
	Reply      *Reply     `json:"reply,omitempty"`
	ProposalID ProposalID `json:"proposal_id,omitempty"`
	Failure    string     `json:"failure,omitempty"`
}
