package bot_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// Explain gives every refusal its own sentence, however deeply the error
// is wrapped, and the not-found errors keep ErrNotFound's text and match.
func TestExplainSaysWhatHappened(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("approve p_x: %w", err) }
	cases := []struct {
		err  error
		want string
	}{
		{wrap(&bot.PolicyError{Rule: "the default policy lets only admins decide"}), "You can't do that here: the default policy lets only admins decide."},
		{wrap(bot.ErrNothingToWithdraw), "You have no approval of this proposal to withdraw."},
		{wrap(&bot.DecidedError{State: board.ProposalApproved, By: "alice"}), "This proposal was already approved by alice."},
		{wrap(&bot.DecidedError{State: "closed", Other: "p_y"}), "Another version of this plan (p_y) was approved"},
		{wrap(bot.ErrForbidden), "Only the person who asked for this plan"},
		{wrap(bot.ErrExpired), "This proposal expired."},
		{fmt.Errorf("%w: %w", bot.ErrNoCard, board.ErrNotFound), "I can't find that card"},
		{wrap(bot.ErrNoBoard), "This channel has no board yet."},
		{wrap(bot.ErrNoBoardKey), "No board has that key"},
		{wrap(bot.ErrNoProposal), "I can't find that proposal any more."},
		{wrap(bot.ErrNotFound), "I can't find that any more."},
		{wrap(board.ErrRunGoing), "That board has a run going"},
		{wrap(bot.ErrNoRuns), "This BobNet does not run boards."},
		{fmt.Errorf("%w: 10 of 10 tokens used today", bot.ErrOverBudget), "spent its model budget for today: 10 of 10 tokens used today."},
		{wrap(bot.ErrRateLimited), "Slow down"},
		{fmt.Errorf("approve: %w: %w", bot.ErrUnavailable, errors.New("dial tcp: refused")), "BobNet's database is unavailable right now; nothing was changed."},
		{errors.New("revise: say what to change"), "That did not work, and nothing was changed: revise: say what to change."},
	}
	for _, c := range cases {
		if got := bot.Explain(c.err); !strings.Contains(got, c.want) {
			t.Errorf("Explain(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if got := bot.Explain(fmt.Errorf("%w: %w", bot.ErrUnavailable, errors.New("dial tcp 10.0.0.5:5432"))); strings.Contains(got, "10.0.0.5") {
		t.Errorf("Explain leaks an infrastructure error: %q", got)
	}
	for _, err := range []error{bot.ErrNoProposal, bot.ErrNoCard, bot.ErrNoBoard, bot.ErrNoBoardKey, bot.ErrNoRun} {
		if !errors.Is(wrap(err), bot.ErrNotFound) || err.Error() != bot.ErrNotFound.Error() {
			t.Errorf("%v does not read and match as ErrNotFound", err)
		}
	}
	if bot.Explain(nil) != "" {
		t.Error("Explain(nil) is not empty")
	}
}
