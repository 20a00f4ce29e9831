package board

import (
	"errors"
	"fmt"
	"time"

	"github.com/bobnet/bobnet/plan"
)

// The states of a run.
const (
	RunRunning  = "running"
	RunDone     = "done"
	RunStopped  = "stopped"
	RunTimedOut = "timed_out"
)

// ErrRunGoing means the board has a run that has not ended: one run at a
// time per board.
var ErrRunGoing = errors.New("a run of this board is still going")

// ErrNotRunnable means a run card cannot take that step now (not in
// Review, the run ended, sent back too often, a lease another holds).
var ErrNotRunnable = errors.New("not possible in this run now")

// ErrUnderReview is matched by *ReviewGateError: a card of a running
// run that is in Review moves on only through its review decision, and a
// runner's card whose output is reviewed reaches Done only through it.
var ErrUnderReview = errors.New("card waits for its review")

// ReviewGateError refuses a move that would skip a review in a running
// run: a card leaves Review, and a reviewed runner's card reaches Done,
// only through the review (accept or send back), under the channel's
// policy, whoever asks and from wherever.
type ReviewGateError struct {
	Card   Card // the card as it is: in Review, or a runner's not yet reviewed
	Run    RunID
	Number int // the run's number on its board
}

// ReviewPath is the API route that decides the card's review.
func (e *ReviewGateError) ReviewPath() string {
	return fmt.Sprintf("/api/v1/runs/%s/cards/%s/review", e.Run, e.Card.Handle)
}

func (e *ReviewGateError) Error() string {
	h := e.Card.Handle
	if e.Card.Status != "Review" {
		return fmt.Sprintf("%s is its runner's in run %d and becomes Done only through its review: move it to Review, then POST %s, or in chat `accept %s` or `sendback %s <why>`",
			h, e.Number, e.ReviewPath(), h, h)
	}
	return fmt.Sprintf("%s waits for its review in run %d and moves on only through it: POST %s, or in chat `accept %s` or `sendback %s <why>`",
		h, e.Number, e.ReviewPath(), h, h)
}

// Is makes errors.Is(err, ErrUnderReview) true.
func (e *ReviewGateError) Is(target error) bool { return target == ErrUnderReview }

// ErrStaleReview means a review decision was made on an earlier round of
// its card: the card was sent back and worked again since, so the
// decision changes nothing.
var ErrStaleReview = errors.New("this review is of an earlier output of the card")

// AnyRound, as the round of a review decision, decides the card in
// whatever round it is in now (a person naming the card in chat, or a
// REST call without a round).
const AnyRound = -1

// MaxOutput is the most a card's output may hold (256 KiB).
const MaxOutput = 256 << 10

// Run is one run of a board.
type Run struct {
	ID        RunID      `json:"id"`
	Board     ID         `json:"board_id"`
	Number    int        `json:"number"`
	State     string     `json:"state"`
	StartedBy string     `json:"started_by"`
	Trigger   string     `json:"trigger"`
	StartedAt time.Time  `json:"started_at"`
	Deadline  time.Time  `json:"deadline"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	Cards     []RunCard  `json:"cards"`
}

// RunCard is a card as one run works it.
type RunCard struct {
	Card      CardID   `json:"card_id"`
	Handle    string   `json:"handle"`
	Title     string   `json:"title"`
	Status    string   `json:"status"`
	Assignee  string   `json:"assignee"`
	Runner    string   `json:"runner"`
	Review    bool     `json:"review"`
	Output    string   `json:"output"`
	Attempts  int      `json:"attempts"`
	Rounds    int      `json:"rounds"`
	Feedback  string   `json:"feedback,omitempty"`
	Error     string   `json:"error,omitempty"`
	DependsOn []CardID `json:"depends_on"`
}

// RunStart says how to start a run.
type RunStart struct {
	Board   ID
	User    string
	Trigger string // manual, schedule or catch_up
	// Runners says who works each assignee's cards and whether their
	// output goes to Review before Done.
	Runners  plan.Runners
	Deadline time.Duration
}

// RunJob is a card a runner took: the card, its run, what it waits on
// (with their outputs) and the reason it was last sent back.
type RunJob struct {
	Run      Run
	Board    Board // the card's board, with its channel and thread
	Card     Card
	RunCard  RunCard
	Inputs   []RunCard // the cards it depends on, with their outputs
	Attempt  int
	Feedback string
	// Holder names this taking of the card; CompleteRunCard and
	// FailRunCard need it.
	Holder string
}
