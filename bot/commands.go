package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bobnet/bobnet/board"
)

// The verbs' handlers (the Do of each row of Verbs). Each reads its
// arguments, says how to write the command when they are wrong, and calls
// only the engine's tenant-scoped lookups (tenant.go) through Surface.

// doPlan checks that there is something to plan; the surface submits it
// (Slack first posts it, to have a thread).
func doPlan(_ context.Context, _ Surface, c Command) CommandAnswer {
	if c.Text == "" {
		return CommandAnswer{Text: "Say what to plan: " + c.Dialect.code(c.Dialect.Prefix+"plan our product launch") + "."}
	}
	return CommandAnswer{Act: ActPlan, Text: c.Text}
}

// doLeave says goodbye; the surface leaves the room.
func doLeave(context.Context, Surface, Command) CommandAnswer {
	return CommandAnswer{Act: ActLeave, Text: "Bye! Invite me again whenever you need a plan."}
}

// noSuchBoard answers a status request naming a board id nobody made.
const noSuchBoard = "There is no board with that id. Board ids are long and exact: check that the whole id was copied."

// doStatus shows the channel's board, or a board of the tenant by its id.
func doStatus(ctx context.Context, s Surface, c Command) CommandAnswer {
	var st board.Status
	var err error
	byID := len(c.Args) > 0
	if byID {
		id, perr := board.ParseID(c.Args[0])
		if perr != nil {
			return CommandAnswer{Text: "That is not a board id; board ids look like b_ followed by 26 letters and digits."}
		}
		st, err = s.BoardStatusIn(ctx, c.Channel, id)
	} else {
		st, err = s.ChannelStatus(ctx, c.Channel)
	}
	budget := func() string {
		if byID && !c.Dialect.BudgetAlways {
			return ""
		}
		return budgetLine(ctx, s, c)
	}
	switch {
	case errors.Is(err, ErrNotFound) && byID:
		return CommandAnswer{Text: noSuchBoard}
	case errors.Is(err, ErrNotFound):
		a := CommandAnswer{Text: noBoardText(c.Dialect.Place)}
		if c.Dialect.BudgetAlways {
			a.BudgetLine = budget()
		}
		return a
	case err != nil:
		return CommandAnswer{Err: err}
	}
	return CommandAnswer{Status: &st, RunsLine: s.RunsLine(ctx, st.Board), BudgetLine: budget()}
}

// doNext lists the ready cards of the channel's board.
func doNext(ctx context.Context, s Surface, c Command) CommandAnswer {
	st, err := s.NextCards(ctx, c.Channel)
	switch {
	case errors.Is(err, ErrNotFound):
		return CommandAnswer{Text: noBoardText(c.Dialect.Place)}
	case err != nil:
		return CommandAnswer{Err: err}
	}
	return CommandAnswer{Next: &st}
}

// doMove moves a card: `move NEWS-3 in progress`.
func doMove(ctx context.Context, s Surface, c Command) CommandAnswer {
	card, status, ok := SplitCardStatus(c.Args)
	if !ok {
		return CommandAnswer{Text: "Say which card and where to: " + c.Dialect.code(c.Dialect.Prefix+"move NEWS-3 in progress") +
			". Statuses: " + strings.Join(board.Statuses, ", ") + "."}
	}
	return updated(s.MoveCard(ctx, c.Channel, c.User, card, status))
}

// doAssign assigns a card to its last word: a profile, none, or a person
// id the surface made of a mention.
func doAssign(ctx context.Context, s Surface, c Command) CommandAnswer {
	if len(c.Args) < 2 {
		d := c.Dialect
		who := ""
		if d.Person != "" {
			who = d.code(d.Prefix+"assign NEWS-3 "+d.Person) + ", "
		}
		return CommandAnswer{Text: "Say which card and to whom: " + who + "a profile (" + d.code(d.Prefix+"assign NEWS-3 Researcher") + ") or " + d.code("none") + "."}
	}
	n := len(c.Args)
	return updated(s.AssignCard(ctx, c.Channel, c.User, strings.Join(c.Args[:n-1], " "), c.Args[n-1]))
}

func updated(up board.CardUpdate, err error) CommandAnswer {
	if err != nil {
		return CommandAnswer{Err: err}
	}
	return CommandAnswer{Update: &up}
}

// doRun starts a run of the channel's board or of the board with a key.
// A replayed command starts nothing.
func doRun(ctx context.Context, s Surface, c Command) CommandAnswer {
	if c.Once != nil {
		first, err := c.Once(ctx)
		if err != nil {
			return CommandAnswer{Err: fmt.Errorf("%w: %w", ErrUnavailable, err)}
		}
		if !first {
			return CommandAnswer{Text: "Already on it."}
		}
	}
	r, err := s.StartRun(ctx, c.Channel, c.User, firstArg(c.Args))
	if err != nil {
		return CommandAnswer{Err: err}
	}
	return CommandAnswer{Text: fmt.Sprintf("Run %d started; its news goes to the board's thread", r.Number),
		Link: Link{URL: RunURL(c.PublicURL, r), Label: "The run page"}}
}

// doRuns lists the latest runs of a board.
func doRuns(ctx context.Context, s Surface, c Command) CommandAnswer {
	b, runs, err := s.RecentRuns(ctx, c.Channel, firstArg(c.Args))
	if err != nil {
		return CommandAnswer{Err: err}
	}
	return CommandAnswer{Text: RunsText(c.PublicURL, b, runs)}
}

// doSchedule shows or sets when a board runs by itself.
func doSchedule(ctx context.Context, s Surface, c Command) CommandAnswer {
	sc, err := ParseScheduleCommand(c.Args)
	if err != nil {
		return CommandAnswer{Text: c.Dialect.text(err.Error())}
	}
	text, err := s.Schedule(ctx, c.Channel, c.User, sc)
	if err != nil {
		return CommandAnswer{Err: err}
	}
	return CommandAnswer{Text: c.Dialect.text(text)}
}

// doReview accepts a card under review, or sends it back with a reason;
// the board's thread is told.
func doReview(ctx context.Context, s Surface, c Command) CommandAnswer {
	accept := c.Verb == "accept"
	if len(c.Args) == 0 || (!accept && len(c.Args) < 2) {
		d := c.Dialect
		return CommandAnswer{Text: "Say which card, and when sending back, why: " + d.code(d.Prefix+"accept NEWS-3") + ", " +
			d.code(d.Prefix+"sendback NEWS-3 cite the sources") + "."}
	}
	reason := ""
	if !accept {
		reason = strings.Join(c.Args[1:], " ")
	}
	up, err := s.ReviewByHandle(ctx, c.Channel, c.User, c.Args[0], accept, reason)
	if err != nil {
		return CommandAnswer{Err: err}
	}
	return CommandAnswer{Text: fmt.Sprintf("%s is now %s.", up.Card.Handle, up.Card.Status), Told: true}
}

// doPolicy shows the policy in force in the channel.
func doPolicy(ctx context.Context, s Surface, c Command) CommandAnswer {
	in, err := s.PolicyFor(ctx, c.Channel)
	if err != nil {
		return CommandAnswer{Err: err}
	}
	return CommandAnswer{Policy: &in}
}

func firstArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return ""
}
