package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/planner"
)

// HookStore dispatches the cards of hook runners; *store.Store is one.
type HookStore interface {
	DispatchRunCard(ctx context.Context, runner string, dispatch func(job board.RunJob) (token string, evs []board.OutboundEvent, err error)) (board.RunJob, bool, error)
}

// Events turns a card.dispatched event into outbox rows, for the
// dispatch to write in its own transaction, and wakes the sender once
// they are written; *outbox.Outbox is one.
type Events interface {
	Encode(ev bot.Event) ([]board.OutboundEvent, error)
	Wake()
}

// Hooks is what dispatching cards to other tools needs (Config.Hooks).
// With it the worker dispatches the cards of every profile with
// `runner: hook:<name>`: each card, when its dependencies are Done, is
// sent once as a card.dispatched event to that hook's callbacks, with a
// token to post its output to PublicURL with, made with the hook's key
// of Keys (board.RunToken; the outbox puts it into the event as it sends
// it, with the same keys).
type Hooks struct {
	Store     HookStore
	Events    Events
	PublicURL string
	Keys      map[string][]byte // each hook's card token key
}

// hooks is Hooks with the hooks profiles name as runners.
type hooks struct {
	store     HookStore
	events    Events
	publicURL string
	keys      map[string][]byte
	names     []string // the hooks profiles name as runners
}

// newHooks is h for profiles; nil when h is nil (no hooks dispatched).
func newHooks(h *Hooks, profiles []planner.Profile) *hooks {
	if h == nil {
		return nil
	}
	x := &hooks{store: h.Store, events: h.Events, publicURL: h.PublicURL, keys: h.Keys}
	for _, p := range profiles {
		if name, ok := strings.CutPrefix(p.Runner, "hook:"); ok && !slices.Contains(x.names, name) {
			x.names = append(x.names, name)
		}
	}
	slices.Sort(x.names)
	return x
}

// HookNames are the hooks the worker dispatches cards to.
func (w *Worker) HookNames() []string {
	if w.hooks == nil {
		return nil
	}
	return slices.Clone(w.hooks.names)
}

// dispatchLoop dispatches every card that may go until none is left,
// then waits a poll, until ctx ends.
func (w *Worker) dispatchLoop(ctx context.Context) {
	for ctx.Err() == nil {
		busy := false
		for _, name := range w.hooks.names {
			sent, err := w.DispatchOne(ctx, name)
			if err != nil && ctx.Err() == nil {
				w.logger.Warn("dispatch a run card", "hook", name, "err", err)
			}
			busy = busy || sent
		}
		if !busy {
			sleep(ctx, w.cfg.Poll)
		}
	}
}

// DispatchOne dispatches the next card of hook's runner that may go:
// one card.dispatched event to the hook's callbacks, written to the
// outbox with the card's claim, so one replica sends it, once per round.
// sent is false when there was none. A hook without callbacks fails the
// card's attempt with the reason, as a runner that failed would.
func (w *Worker) DispatchOne(ctx context.Context, hook string) (sent bool, err error) {
	if w.hooks == nil {
		return false, errors.New("the worker dispatches no hooks (Config.Hooks)")
	}
	key, configured := w.hooks.keys[hook]
	job, ok, err := w.hooks.store.DispatchRunCard(ctx, "hook:"+hook, func(job board.RunJob) (string, []board.OutboundEvent, error) {
		if !configured {
			return "", nil, fmt.Errorf("hook:%s is not a hook of BOBNET_HOOK_SECRETS", hook)
		}
		// The event holds a placeholder: the token is made again as the
		// outbox sends it, so no copy of it is stored.
		cb := bot.RunCallback{URL: bot.OutputURL(w.hooks.publicURL, job.Run.ID, job.Card.ID), Token: board.RunTokenPlaceholder(hook, job.Run.ID, job.Card.ID, job.Holder)}
		evs, err := w.hooks.events.Encode(bot.DispatchEvent(job, hook, w.hooks.publicURL, cb, time.Now()))
		return board.RunToken(key, job.Run.ID, job.Card.ID, job.Holder), evs, err
	})
	if errors.Is(err, board.ErrNotRunnable) {
		w.logger.Warn("run card not dispatched", "hook", hook, "card", job.Card.Handle, "run", job.Run.ID, "attempt", job.Attempt, "err", err)
		w.tell.RunCardMoved(ctx, job) // its attempt failed
		return true, nil
	}
	if err != nil || !ok {
		return false, err
	}
	w.hooks.events.Wake()
	w.tell.RunCardMoved(ctx, job)
	w.logger.Info("run card dispatched", "hook", hook, "card", job.Card.Handle, "run", job.Run.ID, "attempt", job.Attempt, "round", job.RunCard.Rounds)
	return true, nil
}
