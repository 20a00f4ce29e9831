package board

import (
	"errors"
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
