package bot

import (
	"context"

	"github.com/bobnet/bobnet/board"
)

// Poster is what an adapter gives the engine to speak on its surface. The
// engine calls it from its workers; calls must be safe concurrently.
type Poster interface {
	// Reply posts a text reply in the thread.
	Reply(ctx context.Context, t board.Thread, r board.Reply) error
	// PostPreview posts a pending proposal's preview with Approve / Revise /
	// Cancel and returns the message's ref so it can be updated.
	PostPreview(ctx context.Context, p board.Proposal) (board.MessageRef, error)
	// UpdatePreview redraws a posted preview after its state changed
	// (approved, cancelled, expired, superseded): buttons gone, who decided
	// shown, "Propose again" offered for an expired one.
	UpdatePreview(ctx context.Context, p board.Proposal) error
}

// Notifier posts a message only one person sees (Slack's ephemeral
// messages). A surface without one (Registration.Notifier nil) gets a thread
// reply instead.
type Notifier interface {
	Notify(ctx context.Context, t board.Thread, user string, r board.Reply) error
}

// Registration is what an adapter registers for its source: the poster it
// speaks with, and what else its platform offers. Every field but Poster
// may be nil; the doc of each interface says what the engine does
// without it.
type Registration struct {
	Poster Poster
	// Notifier tells one person something privately; nil: a thread reply.
	Notifier Notifier
	// Reminders reminds deciders the surface's own way; nil: a thread
	// reply.
	Reminders RemindPoster
	// PowerLevels reads Matrix power levels for "matrix_power:N" deciders.
	PowerLevels PowerLevels
	// Groups reads Slack user groups for "slack_group:" deciders.
	Groups SlackGroups
	// Drafts shows a plan while the model writes it; nil: only the answer
	// (showing.go).
	Drafts Drafter
	// Runs shows a run's progress as one message; nil: the run's replies
	// alone.
	Runs RunShower
}

// Register registers the surface of src, replacing the one before.
func (e *Engine) Register(src board.Source, s Registration) {
	if s.Poster == nil {
		s.Poster = discard{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.surfaces[src] = s
}

// registration is what was registered for src; a source nobody registered
// posts nowhere and offers nothing else.
func (e *Engine) registration(src board.Source) Registration {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if s, ok := e.surfaces[src]; ok {
		return s
	}
	return Registration{Poster: discard{}}
}

func (e *Engine) poster(src board.Source) Poster { return e.registration(src).Poster }

// discard is the poster of a surface nobody registered: its messages go
// nowhere, but the engine's work (and audit) still happens.
type discard struct{}

func (discard) Reply(context.Context, board.Thread, board.Reply) error                { return nil }
func (discard) PostPreview(context.Context, board.Proposal) (board.MessageRef, error) { return "", nil }
func (discard) UpdatePreview(context.Context, board.Proposal) error                   { return nil }
