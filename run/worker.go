// Package run works the runs of boards: it hands the cards of running
// runs to their runners (the model, for profiles with `runner: model`),
// keeps their outputs, and ends runs that are done, stopped or past their
// deadline. The runs themselves live in Postgres (store.Store); any
// number of replicas may run a Worker.
package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
)

// RunCards is what the worker needs of the runs' storage; *store.Store is
// one.
type RunCards interface {
	ClaimRunCard(ctx context.Context, runner string, lease time.Duration) (board.RunJob, bool, error)
	CompleteRunCard(ctx context.Context, job board.RunJob, actor, output string) (board.CardUpdate, error)
	FailRunCard(ctx context.Context, job board.RunJob, why string) error
	ReleaseRunCard(ctx context.Context, job board.RunJob, wait time.Duration) error
	RenewRunCard(ctx context.Context, job board.RunJob, lease time.Duration) error
	SweepRuns(ctx context.Context) ([]board.Run, error)
	UntoldRunEnds(ctx context.Context, limit int) ([]board.Run, error)
}

// Model writes a card's output; *planner.Client is one.
type Model interface {
	Write(ctx context.Context, msgs []planner.Message) (string, int, error)
}

// Teller tells people what a run did: a card taken or failed, a runner's
// output kept (and, when the card went to Review, that it waits for
// them), a run waiting for the model budget, a run that ended. It is called after the change is
// committed.
type Teller interface {
	CardOutput(ctx context.Context, job board.RunJob, up board.CardUpdate)
	// RunCardMoved: a runner took a card of job's run (In Progress), or
	// failed it.
	RunCardMoved(ctx context.Context, job board.RunJob)
	Waiting(ctx context.Context, job board.RunJob, why error)
	Ended(ctx context.Context, r board.Run)
	RetellEnded(ctx context.Context, r board.Run)
}

// Budget keeps runner model calls within the channel's model budget, as
// planning's are; *bot.Engine is one.
type Budget interface {
	// ModelBudget is nil when the channel may ask the model now. An error
	// with a ResetsAt() time.Time method says when it may again.
	ModelBudget(ctx context.Context, channel string) error
	ChargeModel(ctx context.Context, channel string, tokens int)
}

// Observer is told what runs do, for metrics; *metrics.Metrics is one.
type Observer interface {
	RunEnded(state string)
	CardWorked(d time.Duration)
}

// Config tunes the worker.
type Config struct {
	// Workers is how many cards one replica works at once.
	Workers int
	// Lease is how long a card is held by a runner that stopped renewing
	// it before another replica may take it; a working runner renews it
	// every third of it.
	Lease time.Duration
	// Poll is how often an idle worker looks for cards and ended runs.
	Poll time.Duration
	// Hooks, when set, makes the worker dispatch the cards of hook
	// runners to other tools (see Hooks); nil: it dispatches none.
	Hooks *Hooks
}

// DefaultLease is a Config's Lease when it names none: BOBNET_RECLAIM_IDLE's
// default.
const DefaultLease = time.Minute

// Worker works the model's cards of every running run.
type Worker struct {
	store    RunCards
	model    Model
	tell     Teller
	budget   Budget
	obs      Observer
	profiles map[string]planner.Profile // plan.RunnerKey of the name -> profile
	runners  plan.Runners
	cfg      Config
	logger   *slog.Logger
	hooks    *hooks // nil: cards of hook runners are not dispatched
}

// NewWorker makes a worker; profiles are the deployment's assignee
// profiles, whose instructions the model gets.
func NewWorker(store RunCards, model Model, tell Teller, budget Budget, obs Observer, profiles []planner.Profile, cfg Config, logger *slog.Logger) *Worker {
	byName := map[string]planner.Profile{}
	for _, p := range profiles {
		byName[plan.RunnerKey(p.Name)] = p
	}
	if cfg.Workers < 1 {
		cfg.Workers = 1
	}
	// A zero lease would let any replica take a card the moment it was
	// taken (and stop the renewal ticker with a panic); serve's default.
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	return &Worker{store: store, model: model, tell: tell, budget: budget, obs: obs, profiles: byName, runners: planner.RunnersOf(profiles), hooks: newHooks(cfg.Hooks, profiles), cfg: cfg, logger: logger}
}

// Runners says who works each assignee's cards and whether they are
// reviewed, from the profiles: RunStart's Runners.
func (w *Worker) Runners() plan.Runners { return w.runners }

// Run works until ctx ends.
//
// Its pollers (each worker, the hooks' dispatch, the sweep) start spread
// over one poll period: started together, an idle server's pollers
// stayed in step and each held a Postgres connection of its own for
// good; spread, they take turns on one.
func (w *Worker) Run(ctx context.Context) error {
	pollers := w.cfg.Workers + 2
	start := func(i int) { sleep(ctx, w.cfg.Poll*time.Duration(i)/time.Duration(pollers)) }
	var wg sync.WaitGroup
	for i := range w.cfg.Workers {
		wg.Go(func() {
			start(i)
			for ctx.Err() == nil {
				worked, err := w.WorkOne(ctx)
				if err != nil && ctx.Err() == nil {
					w.logger.Warn("run worker", "err", err)
				}
				if !worked {
					sleep(ctx, w.cfg.Poll)
				}
			}
		})
	}
	if w.hooks != nil {
		wg.Go(func() {
			start(w.cfg.Workers)
			w.dispatchLoop(ctx)
		})
	}
	wg.Go(func() {
		start(w.cfg.Workers + 1)
		for ctx.Err() == nil {
			if _, err := w.Sweep(ctx); err != nil && ctx.Err() == nil {
				w.logger.Warn("end runs", "err", err)
			}
			sleep(ctx, w.cfg.Poll)
		}
	})
	wg.Wait()
	return nil
}

// Sweep ends the runs that have ended and tells their threads, and tells
// again the ends a replica that died (or a chat platform that refused)
// left untold.
func (w *Worker) Sweep(ctx context.Context) ([]board.Run, error) {
	ended, err := w.store.SweepRuns(ctx)
	for _, r := range ended {
		w.logger.Info("run ended", "board", r.Board, "run", r.ID, "number", r.Number, "state", r.State, "reason", r.Reason)
		w.obs.RunEnded(r.State)
		w.tell.Ended(ctx, r)
	}
	if err != nil {
		return ended, err
	}
	untold, err := w.store.UntoldRunEnds(ctx, 10)
	for _, r := range untold {
		w.logger.Info("run's end not told; telling it", "board", r.Board, "run", r.ID, "number", r.Number)
		w.tell.RetellEnded(ctx, r)
	}
	return ended, err
}

// WorkOne takes one card for the model and works it; worked is false
// when there was none to take.
func (w *Worker) WorkOne(ctx context.Context) (worked bool, err error) {
	job, ok, err := w.store.ClaimRunCard(ctx, "model", w.cfg.Lease)
	if err != nil || !ok {
		return false, err
	}
	p, known := w.profiles[plan.RunnerKey(job.Card.Assignee)]
	if !known || p.Runner != "model" {
		// The profile changed since the run started; people work it.
		return true, w.fail(ctx, job, fmt.Sprintf("%q is no longer a profile the model works", job.Card.Assignee))
	}
	if err := w.budget.ModelBudget(ctx, job.Board.Channel); err != nil {
		// The run waits rather than spend past the budget: the card goes
		// back, uncounted, and the run's model cards wait until the
		// budget may allow them; the runners work other runs meanwhile.
		if rerr := w.store.ReleaseRunCard(context.WithoutCancel(ctx), job, w.budgetWait(err)); rerr != nil {
			return true, rerr
		}
		w.tell.Waiting(ctx, job, err)
		return true, nil
	}
	w.tell.RunCardMoved(ctx, job)
	start := time.Now()
	held, release := w.hold(ctx, job)
	out, tokens, err := w.model.Write(held, Messages(p, job))
	lost := held.Err() != nil && ctx.Err() == nil
	release()
	w.budget.ChargeModel(context.WithoutCancel(ctx), job.Board.Channel, tokens)
	if lost {
		w.logger.Info("run card taken over or run ended while the model worked it", "card", job.Card.Handle, "run", job.Run.ID)
		return true, nil
	}
	if err == nil && strings.TrimSpace(out) == "" {
		err = errors.New("the model answered with nothing")
	}
	if err != nil {
		if ctx.Err() != nil {
			// Shutting down: the lease ends and another replica takes it.
			return true, nil
		}
		w.logger.Warn("model runner failed", "card", job.Card.Handle, "run", job.Run.ID, "attempt", job.Attempt, "err", err)
		return true, w.fail(context.WithoutCancel(ctx), job, failure(err))
	}
	up, err := w.store.CompleteRunCard(ctx, job, p.Name, out)
	if errors.Is(err, board.ErrNotRunnable) {
		w.logger.Info("run card taken over or run ended before its output was kept", "card", job.Card.Handle, "run", job.Run.ID)
		return true, nil
	}
	if err != nil {
		// The output could not be kept: the attempt failed, with the
		// reason kept for the thread should the run stop over it, rather
		// than the card waiting for its lease to run out.
		w.logger.Warn("run card output not kept", "card", job.Card.Handle, "run", job.Run.ID, "attempt", job.Attempt, "err", err)
		if ferr := w.fail(context.WithoutCancel(ctx), job, "its output could not be kept: "+err.Error()); ferr != nil {
			return true, errors.Join(err, ferr)
		}
		return true, nil
	}
	w.obs.CardWorked(time.Since(start))
	w.logger.Info("model worked a card", "card", job.Card.Handle, "run", job.Run.ID, "status", up.Card.Status, "seconds", time.Since(start).Seconds())
	job.Card, job.RunCard.Status, job.RunCard.Output = up.Card, up.Card.Status, out
	w.tell.CardOutput(ctx, job, up)
	return true, nil
}

// fail fails job's attempt with why and shows it.
func (w *Worker) fail(ctx context.Context, job board.RunJob, why string) error {
	if err := w.store.FailRunCard(ctx, job, why); err != nil {
		return err
	}
	w.tell.RunCardMoved(ctx, job)
	return nil
}

// BudgetRecheck is the longest a run whose channel spent its model budget
// waits before its cards are tried again, even when the budget resets
// later: a budget raised during the day is noticed within it.
const BudgetRecheck = 5 * time.Minute

// budgetWait is how long a run's model cards wait after the budget
// refused one with err: until the budget resets (err's ResetsAt), at
// most BudgetRecheck; a poll when the budget could not be read.
func (w *Worker) budgetWait(err error) time.Duration {
	var over interface{ ResetsAt() time.Time }
	if !errors.As(err, &over) {
		return w.cfg.Poll
	}
	return min(max(time.Until(over.ResetsAt()), w.cfg.Poll), BudgetRecheck)
}

// failure is what the run keeps of a model error: what people can act
// on, not the server's address.
func failure(err error) string {
	switch {
	case errors.Is(err, planner.ErrTimeout):
		return "the model took too long"
	case errors.Is(err, planner.ErrUnreachable):
		return "the model server is unreachable"
	}
	return err.Error()
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
