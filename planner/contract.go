package planner

import "errors"

// Options tell the validator what it is checking against.
type Options struct {
	// Profiles are the assignee names known to this deployment; an assignee
	// outside them is a warning (matched case-insensitively).
	Profiles []string
	// HasTargetBoard says the channel has a current board, so create_card and
	// create_card_batch actions have somewhere to land. Without one they are
	// errors.
	HasTargetBoard bool
	// Board is the channel's current board, every card with its handle,
	// status and dependencies, so update_card and add_links can be checked
	// against it (unknown cards, cycles with existing links). Nil means
	// those actions cannot be checked and are refused.
	Board *BoardState
}

// BoardState is a board as V2 actions are validated against it.
type BoardState struct {
	// Name and Key name the board in warnings, such as a plan that would
	// make the channel a second board.
	Name, Key string
	Cards     []CardSummary
}

// Result is the outcome of parsing and validating one raw model output.
// Plan is the normalized envelope; it is set whenever the output parsed into
// an object of the right shape, even when Valid is false, so a person can see
// what the model meant.
type Result struct {
	Valid    bool      `json:"valid"`
	Kind     Kind      `json:"kind"`
	Errors   []Issue   `json:"errors"`
	Warnings []Issue   `json:"warnings"`
	Plan     *Envelope `json:"plan"`
	Stats    Stats     `json:"stats"`
}

// BoardSummary describes the channel's current board to the model.
type BoardSummary struct {
	ID     string
	Name   string
	Goal   string
	Counts map[string]int // cards by status
	Cards  []CardSummary  // may be trimmed to the most relevant
	// State is every card of the board, for validating changes to it.
	State *BoardState
}

// CardSummary describes one existing card to the model.
type CardSummary struct {
	ID       string
	Handle   string // NEWS-3; what people and plans call the card
	Title    string
	Status   string
	Assignee string
	// DependsOn holds the ids of the cards it depends on.
	DependsOn []string
}

// Turn is an earlier message in the thread. Text from the model or other
// users is quoted into the prompt as data, never as instructions.
type Turn struct {
	Role string // "user" or "assistant"
	User string
	Text string
}

// PromptInput is everything the prompt builder needs for one planning turn.
type PromptInput struct {
	Board        *BoardSummary // nil when the channel has no board yet
	SelectedCard *CardSummary  // nil when none
	Profiles     []Profile
	History      []Turn
	Message      string
	// PreviousPlan and Feedback are set when a person asked to revise a
	// proposal: the model sees the old plan (as data) and the feedback.
	PreviousPlan *Envelope
	Feedback     string
}

// Outcome is what a planning call produced: the validated result, the raw
// output it came from, and whether the one repair call was needed.
type Outcome struct {
	Result   Result
	Raw      string
	Repaired bool
	// Tokens is what the calls cost, from the server's usage (estimated
	// at four characters a token when it sends none); set on an invalid
	// output too, which cost as much.
	Tokens int
}

// Errors a planning call returns; check with errors.Is.
var (
	// ErrUnreachable means the OpenAI-compatible server could not be reached
	// or kept failing after bounded retries.
	ErrUnreachable = errors.New("planner unreachable")
	// ErrInvalidOutput means the model's output did not parse or validate,
	// even after the repair call. The error is an *InvalidOutputError.
	ErrInvalidOutput = errors.New("model output invalid")
	// ErrTimeout means the planning call ran out of time.
	ErrTimeout = errors.New("planner timed out")
	// ErrOutputTooLarge means the model server sent more than the client
	// reads (MaxResponseBody of an answer, MaxRawOutput of streamed
	// text). It comes inside an *InvalidOutputError.
	ErrOutputTooLarge = errors.New("model output too large")
)

// InvalidOutputError carries the raw outputs and the findings of a planning
// call whose output could not be used, for debugging. It matches
// ErrInvalidOutput with errors.Is.
type InvalidOutputError struct {
	Raw    []string // every output the model gave, first the original
	Errors []Issue
	// Cause, when set, is why there was no output to check (as
	// ErrOutputTooLarge); errors.Is finds it.
	Cause error
}

func (e *InvalidOutputError) Error() string {
	if len(e.Errors) == 0 {
		return ErrInvalidOutput.Error()
	}
	return ErrInvalidOutput.Error() + ": " + e.Errors[0].Path + ": " + e.Errors[0].Message
}

// Is makes errors.Is(err, ErrInvalidOutput) true.
func (e *InvalidOutputError) Is(target error) bool { return target == ErrInvalidOutput }

// Unwrap returns the cause, if any.
func (e *InvalidOutputError) Unwrap() error { return e.Cause }

// Profile is an assignee profile loaded from an AGENT.md file (seed 003).
type Profile struct {
	Name        string   `yaml:"name" json:"name"`
	Description string   `yaml:"description" json:"description"`
	Skills      []string `yaml:"skills" json:"skills,omitempty"`
	Model       string   `yaml:"model" json:"model,omitempty"`
	// Runner says who works the profile's cards in a run of a board:
	// "model" (BobNet asks the model, with Body as its instructions),
	// "hook:<name>" (another tool, through that hook's callbacks) or empty
	// (people, from chat, the page or the API).
	Runner string `yaml:"runner" json:"runner,omitempty"`
	// Review "none" sends a runner's output straight to Done; otherwise
	// it waits in Review for a person to accept it or send it back.
	Review string `yaml:"review" json:"review,omitempty"`
	// Body is the Markdown after the front matter.
	Body string `yaml:"-" json:"-"`
}
