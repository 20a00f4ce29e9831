package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/planner"
)

// UsageStore keeps model budgets: tokens spent per channel and UTC day.
// *store.Store is one; Deps.Usage nil leaves budgets unenforced.
type UsageStore interface {
	AddTokens(ctx context.Context, channel string, at time.Time, n int64) (int64, error)
	TokensUsed(ctx context.Context, channel string, at time.Time) (int64, error)
}

// ErrOverBudget means the channel spent its model budget for the day.
var ErrOverBudget = errors.New("over the model budget")

// Budget is a channel's model use today against its budget.
type Budget struct {
	Used int64 `json:"used"`
	// Limit is the tokens a day the channel may spend; 0 means no limit.
	Limit int64 `json:"limit"`
	// Resets is when the day's count starts again (midnight UTC).
	Resets time.Time `json:"resets"`
}

// Over reports whether the budget is spent.
func (b Budget) Over() bool { return b.Limit > 0 && b.Used >= b.Limit }

// BudgetStatus returns ch's model use today and its budget under the
// channel's policy now.
func (e *Engine) BudgetStatus(ctx context.Context, ch board.Channel) (Budget, error) {
	return e.budgetStatus(ctx, ch, nil, true)
}

// budgetStatus is BudgetStatus under the policy pol read (nil: read
// now); without used, a channel with no limit is not asked what it
// spent.
func (e *Engine) budgetStatus(ctx context.Context, ch board.Channel, pol *policyRead, used bool) (Budget, error) {
	now := e.deps.Now().UTC()
	b := Budget{Resets: time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)}
	us := e.deps.Usage
	if us == nil {
		return b, nil
	}
	in, err := e.policyIn(ctx, ch, pol)
	if err != nil {
		return b, err
	}
	if in.Policy.Budget != nil {
		b.Limit = in.Policy.Budget.TokensPerDay
	}
	if b.Limit <= 0 && !used {
		return b, nil
	}
	if b.Used, err = us.TokensUsed(ctx, ch.Key(), now); err != nil {
		return b, unavailable("read model use", err)
	}
	return b, nil
}

// overBudget is the answer to a request in a channel that spent its model
// budget, or nil when the model may be asked. The check comes before the
// model is called; requests planned at the same moment may together pass
// the budget by one request's worth. pol is the channel's policy being
// read (nil: read it now).
func (e *Engine) overBudget(ctx context.Context, r board.Request, pol *policyRead) *board.Reply {
	b, err := e.budgetStatus(ctx, r.Thread.Channel, pol, false)
	if err != nil {
		e.logger.Warn("read model budget", "request", r.ID, "channel", r.Thread.Channel.Key(), "err", err)
		return &board.Reply{Kind: board.ReplyError, Text: "I can't check this channel's model budget right now, so I didn't ask the model. Please try again in a minute."}
	}
	if !b.Over() {
		return nil
	}
	wait := b.Resets.Sub(e.deps.Now()).Round(time.Minute)
	return &board.Reply{Kind: board.ReplyError, Text: fmt.Sprintf(
		"This channel has used its model budget for today (%d of %d tokens), so I didn't send this to the model. The budget resets at %s (in %s); ask again then, or ask an admin to raise budget.tokens_per_day.",
		b.Used, b.Limit, b.Resets.Format("2006-01-02 15:04 UTC"), wait)}
}

// chargeTokens records what planning r cost its channel.
func (e *Engine) chargeTokens(ctx context.Context, r board.Request, out planner.Outcome) {
	ch := r.Thread.Channel
	if out.Tokens <= 0 {
		return
	}
	e.observe().ModelTokens(ch.Source, out.Tokens)
	us := e.deps.Usage
	if us == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	if _, err := us.AddTokens(ctx, ch.Key(), e.deps.Now(), int64(out.Tokens)); err != nil {
		e.logger.Warn("record model tokens", "request", r.ID, "channel", ch.Key(), "tokens", out.Tokens, "err", err)
	}
}

// channelOf is the channel a key such as "slack:C0123" names.
func channelOf(key string) board.Channel {
	src, id, _ := strings.Cut(key, ":")
	return board.Channel{Source: board.Source(src), ID: id}
}

// ModelBudget says whether a run's runner may ask the model for the
// channel (its key, "slack:C0123") now: nil, or a *BudgetSpentError
// (ErrOverBudget) saying when the budget resets, or ErrUnavailable.
// Runner calls count toward the channel's daily budget as planning does.
func (e *Engine) ModelBudget(ctx context.Context, channel string) error {
	b, err := e.BudgetStatus(ctx, channelOf(channel))
	if err != nil {
		return err
	}
	if b.Over() {
		return &BudgetSpentError{Budget: b}
	}
	return nil
}

// BudgetSpentError is ErrOverBudget with the budget that is spent, so a
// caller can wait until it resets.
type BudgetSpentError struct {
	Budget Budget
}

func (e *BudgetSpentError) Error() string {
	b := e.Budget
	return fmt.Sprintf("%v: %d of %d tokens used today; the budget resets at %s", ErrOverBudget, b.Used, b.Limit, b.Resets.Format("15:04 UTC"))
}

// Is makes errors.Is(err, ErrOverBudget) true.
func (e *BudgetSpentError) Is(target error) bool { return target == ErrOverBudget }

// ResetsAt is when the day's count starts again.
func (e *BudgetSpentError) ResetsAt() time.Time { return e.Budget.Resets }

// ChargeModel records tokens a runner spent for the channel.
func (e *Engine) ChargeModel(ctx context.Context, channel string, tokens int) {
	e.chargeTokens(ctx, board.Request{Thread: board.Thread{Channel: channelOf(channel)}}, planner.Outcome{Tokens: tokens})
}
