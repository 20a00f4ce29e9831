package bot

import (
	"context"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
)

// The optional ways a surface shows work in progress (Registration.Drafts
// and Registration.Runs). A surface without them shows only the finished
// answer and the run's replies.

// Drafter shows a plan while the model is still writing it.
//
// The engine calls Draft from the worker planning the request, with every
// card parsed so far (the list only grows), at most about once a second per
// request, and never after the request's answer. The answer itself still
// comes through Poster: PostPreview for a proposal (Proposal.RequestID
// names the request) or Reply (Reply.Request names it), and a surface that
// drew a draft turns that draft into the answer there, so none is left
// behind whatever the model ended with.
type Drafter interface {
	Draft(ctx context.Context, d Draft) error
}

// Draft is a request's plan as parsed so far. Its cards are drafts: the
// final validation may still refuse them, so a surface shows them as such.
type Draft struct {
	Request board.RequestID
	Thread  board.Thread
	// Title is the board's title once the model has written it.
	Title string
	Cards []plan.CardDraft
}

// RunShower shows a run's cards moving as one message kept up to date.
//
// The engine calls RunProgress when a run starts, as its cards change and
// when it ends, coalesced to at most about one call a second per run; the
// last call of a run has Ended set. Calls for one run come in order.
type RunShower interface {
	RunProgress(ctx context.Context, p RunProgress) error
}

// RunProgress is a run as it stands, for the board's thread.
type RunProgress struct {
	Thread     board.Thread
	BoardTitle string
	Run        board.Run // Cards in board order
	// EditionURL is the run's edition page, once there is one.
	EditionURL string
	Ended      bool
}

// TaskStatus is how a plan block shows a card's status: Backlog and Ready
// are pending, In Progress and Review in_progress, Done complete, and a
// failed run card error.
type TaskStatus string

const (
	TaskPending    TaskStatus = "pending"
	TaskInProgress TaskStatus = "in_progress"
	TaskComplete   TaskStatus = "complete"
	TaskError      TaskStatus = "error"
)

// TaskStatusOf is how a plan block shows a card of status (a board card's
// or a run card's); failed says the run card failed (its Error is set).
func TaskStatusOf(status string, failed bool) TaskStatus {
	switch {
	case failed:
		return TaskError
	case status == "Done":
		return TaskComplete
	case status == "In Progress" || status == "Review":
		return TaskInProgress
	default:
		return TaskPending
	}
}
