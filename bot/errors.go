package bot

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bobnet/bobnet/board"
)

// Errors the engine returns; check with errors.Is. ErrNotFound,
// ErrUnavailable and ErrNotHolder are the stores' (package board's).
var (
	ErrNotFound    = board.ErrNotFound
	ErrExpired     = errors.New("this proposal expired")
	ErrForbidden   = errors.New("not allowed")
	ErrRateLimited = errors.New("slow down")
	// ErrAlreadyDecided is matched by *DecidedError.
	ErrAlreadyDecided = errors.New("proposal already decided")
	ErrUnavailable    = board.ErrUnavailable
	ErrNotHolder      = board.ErrNotHolder
)

// beingDecidedState is the State of a *DecidedError while another decision
// holds the proposal's claim.
const beingDecidedState board.ProposalState = "being decided"

// DecidedError says a proposal can no longer be approved or cancelled
// because it already was, naming its state and board.
type DecidedError struct {
	State   board.ProposalState
	By      string
	BoardID board.ID
	// Other is the version that replaced this one or was approved instead.
	Other board.ProposalID
}

func (e *DecidedError) Error() string {
	if e.Other != "" {
		return fmt.Sprintf("proposal already %s (by version %s)", e.State, e.Other)
	}
	if e.BoardID != "" {
		return fmt.Sprintf("proposal already %s (board %s)", e.State, e.BoardID)
	}
	return fmt.Sprintf("proposal already %s", e.State)
}

// Is makes errors.Is(err, ErrAlreadyDecided) true.
func (e *DecidedError) Is(target error) bool { return target == ErrAlreadyDecided }

// notFoundError is ErrNotFound naming what was not found, so Explain can
// say which; its text is ErrNotFound's, so error strings stay as they were.
type notFoundError struct{ what string }

func (e *notFoundError) Error() string { return ErrNotFound.Error() }

// Is makes errors.Is(err, ErrNotFound) true.
func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

// What ErrNotFound is about, where the engine knows; each matches
// ErrNotFound.
var (
	ErrNoProposal error = &notFoundError{"proposal"}
	ErrNoCard     error = &notFoundError{"card"}
	// ErrNoBoard means the channel has no board yet.
	ErrNoBoard error = &notFoundError{"board"}
	// ErrNoBoardKey means no board has the key a command named.
	ErrNoBoardKey error = &notFoundError{"board key"}
	ErrNoRun      error = &notFoundError{"run"}
)

// Explain is an error from the engine as a sentence for people: what
// happened and, where there is something to do, what. Every surface uses
// it for the text it shows people (chat replies, refusals, the console);
// it is plain text, which each surface escapes or formats its own way.
func Explain(err error) string {
	var (
		decided  *DecidedError
		policy   *PolicyError
		review   *reviewRefusal
		blocked  *board.BlockedError
		gate     *board.ReviewGateError
		amb      *board.AmbiguousError
		conflict *board.ConflictError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &review):
		return "You can't review this: " + strings.TrimPrefix(review.text, "review in run ") + "."
	case errors.As(err, &policy):
		return "You can't do that here: " + policy.Rule + "."
	case errors.Is(err, ErrNothingToWithdraw):
		return "You have no approval of this proposal to withdraw."
	case errors.As(err, &decided):
		return decidedText(decided)
	case errors.Is(err, ErrForbidden):
		return "Only the person who asked for this plan, an admin or one of the channel's deciders can decide it."
	case errors.Is(err, ErrExpired):
		return "This proposal expired. Propose it again to get a fresh one."
	case errors.As(err, &blocked):
		names := make([]string, 0, len(blocked.Blockers))
		for _, c := range blocked.Blockers {
			names = append(names, fmt.Sprintf("%s “%s” (%s)", c.Handle, c.Title, c.Status))
		}
		return fmt.Sprintf("%s can't move to %s yet: it waits on %s. Finish those first, or move it to Blocked.",
			blocked.Card.Handle, blocked.Status, strings.Join(names, ", "))
	case errors.As(err, &gate):
		h := gate.Card.Handle
		if gate.Card.Status != "Review" {
			return fmt.Sprintf("%s is its runner's in run %d, so only its review makes it Done: move it to Review, then a reviewer says `accept %s` or `sendback %s <why>` (API: POST %s).",
				h, gate.Number, h, h, gate.ReviewPath())
		}
		return fmt.Sprintf("%s waits for its review in run %d, so only the review moves it on: a reviewer says `accept %s` or `sendback %s <why>` (or uses the review's buttons; API: POST %s).",
			h, gate.Number, h, h, gate.ReviewPath())
	case errors.As(err, &amb):
		return amb.Error() + "."
	case errors.Is(err, board.ErrAmbiguous):
		return "That handle names cards on boards of several workspaces or rooms; name the card by its id."
	case errors.As(err, &conflict):
		return conflict.Error() + "."
	case errors.Is(err, board.ErrInvalidChange), errors.Is(err, ErrUnknownProfile):
		return "That change isn't possible: " + err.Error() + "."
	case errors.Is(err, ErrStaleReview):
		return "That review is of an earlier output: the card was sent back and worked again since. Review its latest output."
	case errors.Is(err, board.ErrRunGoing):
		return "That board has a run going; it can run again once that one ends (or is stopped)."
	case errors.Is(err, board.ErrNotRunnable):
		return "That card can't be reviewed now: " + strings.TrimPrefix(err.Error(), "not possible in this run now: ") + "."
	case errors.Is(err, ErrNoRuns):
		return "This BobNet does not run boards."
	case errors.Is(err, ErrNoCards):
		return "This BobNet cannot change cards."
	case errors.Is(err, ErrNoHome):
		return "This BobNet cannot list proposals or cards for a home."
	case errors.Is(err, ErrOverBudget):
		return "This channel has spent its model budget for today: " + strings.TrimPrefix(err.Error(), ErrOverBudget.Error()+": ") + "."
	case errors.Is(err, ErrNoBoardKey):
		return "No board has that key; say it as it appears before card numbers, e.g. `run NEWS`."
	case errors.Is(err, ErrNoBoard):
		return noBoardText("channel")
	case errors.Is(err, ErrNoCard):
		return "I can't find that card on this channel's board. Use its handle (such as NEWS-3, shown on the board) or the start of its title."
	case errors.Is(err, ErrNoRun):
		return "I can't find that run."
	case errors.Is(err, ErrNoProposal):
		return "I can't find that proposal any more."
	case errors.Is(err, ErrNotFound):
		return "I can't find that any more."
	case errors.Is(err, ErrRateLimited):
		return "Slow down: too many requests right now. Try again in a minute."
	case errors.Is(err, ErrUnavailable):
		return "BobNet's database is unavailable right now; nothing was changed. Try again in a minute."
	}
	return "That did not work, and nothing was changed: " + err.Error() + "."
}

// decidedText says how a proposal that can no longer be decided was.
func decidedText(de *DecidedError) string {
	switch {
	case de.State == beingDecidedState:
		return "Someone is deciding this proposal right now; nothing was changed. Look again in a moment."
	case de.Other != "":
		return fmt.Sprintf("Another version of this plan (%s) was approved, so this one can't be.", de.Other)
	case de.By != "":
		return fmt.Sprintf("This proposal was already %s by %s.", de.State, de.By)
	}
	return fmt.Sprintf("This proposal was already %s.", de.State)
}
