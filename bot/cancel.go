package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bobnet/bobnet/board"
)

// MaxCancelReason is the longest reason a cancel may give, in characters.
const MaxCancelReason = 500

// ErrReasonTooLong means a cancel's reason is longer than MaxCancelReason.
var ErrReasonTooLong = errors.New("the reason is too long")

// CancelReason tidies a reason a person gave for cancelling: trimmed, with
// line breaks, tabs and other control characters turned into spaces (it
// is shown on one line, on every surface). ErrReasonTooLong when it is
// longer than MaxCancelReason characters; "" is allowed.
func CancelReason(reason string) (string, error) {
	reason = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, reason))
	if n := utf8.RuneCountInString(reason); n > MaxCancelReason {
		return "", fmt.Errorf("%w: %d characters, at most %d", ErrReasonTooLong, n, MaxCancelReason)
	}
	return reason, nil
}

// CancelWithReason closes a pending proposal without writing anything,
// as Cancel does, and keeps why: the reason is in the audit event, the
// proposal.cancelled event, the redrawn preview and a line in the thread.
// An empty reason is allowed; one past MaxCancelReason is refused
// (ErrReasonTooLong) before anything happens.
func (e *Engine) CancelWithReason(ctx context.Context, id board.ProposalID, user, reason string) (board.Proposal, error) {
	reason, err := CancelReason(reason)
	if err != nil {
		return board.Proposal{}, fmt.Errorf("cancel %s: %w", id, err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), decideTimeout)
	defer cancel()
	p, c, err := e.claimFor(ctx, id, user, "cancel")
	if err != nil {
		return board.Proposal{}, err
	}
	p.Reason = reason
	return e.finish(ctx, c, p, board.ProposalCancelled, user, "cancelled")
}

// withReason adds a cancelled proposal's reason to its audit detail.
func withReason(detail map[string]any, p board.Proposal) map[string]any {
	if p.State == board.ProposalCancelled && p.Reason != "" {
		detail["reason"] = p.Reason
	}
	return detail
}

// CancelText is the thread's line about a cancel: "Cancelled by alice:
// not this week", or without a reason "Cancelled by alice.".
func CancelText(p board.Proposal) string {
	if p.Reason == "" {
		return "Cancelled by " + p.DecidedBy + "."
	}
	return "Cancelled by " + p.DecidedBy + ": " + p.Reason
}

// announceReason says in the thread why a proposal was cancelled. A cancel
// without a reason says nothing more than the redrawn preview.
func (e *Engine) announceReason(ctx context.Context, poster Poster, p board.Proposal) error {
	if p.State != board.ProposalCancelled || p.Reason == "" {
		return nil
	}
	return poster.Reply(ctx, p.Thread, board.Reply{Kind: board.ReplyInfo, Text: CancelText(p)})
}
