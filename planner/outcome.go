package planner

import (
	"errors"

	"github.com/bobnet/bobnet/plan"
)

// PromptInput is everything the prompt builder needs for one planning turn.
type PromptInput struct {
	Board        *plan.BoardSummary // nil when the channel has no board yet
	SelectedCard *plan.CardSummary  // nil when none
	Profiles     []Profile
	History      []plan.Turn
	Message      string
	// PreviousPlan and Feedback are set when a person asked to revise a
	// proposal: the model sees the old plan (as data) and the feedback.
	PreviousPlan *plan.Envelope
	Feedback     string
	// OnDraft, when set, hears the plan as read so far while the model
	// streams its answer (the first answer, not a repair's), each time
	// the board's title or a card is complete. It is called on the
	// planning goroutine, so it must return quickly, and never after
	// Plan has returned. A model that does not stream calls it never.
	OnDraft func(Draft)
}

// Outcome is what a planning call produced: the validated result, the raw
// output it came from, and whether the one repair call was needed.
type Outcome struct {
	Result   plan.Result
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
	Errors []plan.Issue
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
