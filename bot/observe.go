package bot

import (
	"errors"
	"time"

	"github.com/bobnet/bobnet/board"
)

// Observer is told what the engine does, for metrics. Its methods are
// called on the engine's own paths, so they must return at once, and from
// many goroutines, so they must be safe for concurrent use.
type Observer interface {
	// RequestRefused says a request was not queued: outcome is
	// "duplicate", "rate_limited", "invalid" or "unavailable".
	RequestRefused(src board.Source, outcome string)
	// RequestAnswered says a queued request got its answer, of kind
	// (ReplyProposal when a preview was posted).
	RequestAnswered(src board.Source, kind board.ReplyKind)
	// ProposalClosed says a proposal left pending for state.
	ProposalClosed(state board.ProposalState)
	// Committed says an approval's board was committed, d after the
	// approval arrived.
	Committed(d time.Duration)
	// ModelTokens says planning or a run in a channel of src spent n
	// model tokens. The channel is not told: what an observer learns
	// names no tenant (Engine.BudgetStatus has a channel's use).
	ModelTokens(src board.Source, n int)
}

// noObserver is the Observer when none is given.
type noObserver struct{}

func (noObserver) RequestRefused(board.Source, string)           {}
func (noObserver) RequestAnswered(board.Source, board.ReplyKind) {}
func (noObserver) ProposalClosed(board.ProposalState)            {}
func (noObserver) Committed(time.Duration)                       {}
func (noObserver) ModelTokens(board.Source, int)                 {}

func (e *Engine) observe() Observer {
	if e.deps.Observer == nil {
		return noObserver{}
	}
	return e.deps.Observer
}

// observeSubmit tells the observer about a Submit that did not queue a new
// request; a queued one is told about when it is answered.
func (e *Engine) observeSubmit(r board.Request, duplicate bool, err error) {
	src := r.Thread.Channel.Source
	switch {
	case err == nil && duplicate:
		e.observe().RequestRefused(src, "duplicate")
	case err == nil:
	case errors.Is(err, ErrRateLimited):
		e.observe().RequestRefused(src, "rate_limited")
	case errors.Is(err, ErrUnavailable):
		e.observe().RequestRefused(src, "unavailable")
	default:
		e.observe().RequestRefused(src, "invalid")
	}
}

// observeAnswer tells the observer how a queued request was answered.
func (e *Engine) observeAnswer(r board.Request, st board.RequestStatus) {
	kind := board.ReplyError
	switch {
	case st.ProposalID != "":
		kind = board.ReplyProposal
	case st.Reply != nil && st.State != board.RequestFailed:
		kind = st.Reply.Kind
	}
	e.observe().RequestAnswered(r.Thread.Channel.Source, kind)
}
