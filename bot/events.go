package bot

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/bobnet/bobnet/board"
)

// EventType names something that happened to a proposal or a board, as
// outbound webhooks carry it.
type EventType string

// The events the engine emits.
const (
	EventProposalCreated   EventType = "proposal.created"
	EventProposalApproved  EventType = "proposal.approved"
	EventProposalCancelled EventType = "proposal.cancelled"
	EventProposalExpired   EventType = "proposal.expired"
	EventBoardCreated      EventType = "board.created"
	// EventCardChanged: a card of a board was moved, reassigned or edited.
	EventCardChanged EventType = "card.changed"
)

// Event is one thing that happened, with the proposal as it stood then.
type Event struct {
	Type     EventType
	At       time.Time
	Proposal Proposal
	// Actor is who caused it (the approver, the canceller); empty for
	// expiry and for the planner's proposal.
	Actor    string
	BoardID  board.ID
	BoardURL string
	// Card is what a card.changed event changed; Proposal is empty then.
	Card *board.CardUpdate
}

// Channel is the key of the channel the event happened in.
func (ev Event) Channel() string {
	if ev.Card != nil {
		return ev.Card.Board.Channel // the channel the board belongs to
	}
	return ev.Proposal.Thread.Channel.Key()
}

// EventSink hears the engine's events; an outbox is one. Emit runs on the
// decision path, so it should be one quick write; its error is logged and
// never undoes the decision.
type EventSink interface {
	Emit(ctx context.Context, ev Event) error
}

// extensions are the engine's optional parts, set after New: where events
// go, and who besides the requester and admins decides in a channel.
type extensions struct {
	mu       sync.RWMutex
	sink     EventSink
	deciders map[string][]string
}

// SetEvents makes the engine hand its events to s.
func (e *Engine) SetEvents(s EventSink) {
	e.ext.mu.Lock()
	defer e.ext.mu.Unlock()
	e.ext.sink = s
}

// SetChannelDeciders lets users decide the proposals of a channel (by its
// key, e.g. "console:hook-github"), beside the requester and the admins.
func (e *Engine) SetChannelDeciders(channel string, users []string) {
	e.ext.mu.Lock()
	defer e.ext.mu.Unlock()
	if e.ext.deciders == nil {
		e.ext.deciders = map[string][]string{}
	}
	e.ext.deciders[channel] = slices.Clone(users)
}

// ChannelDeciders returns the extra deciders of a channel.
func (e *Engine) ChannelDeciders(channel string) []string {
	e.ext.mu.RLock()
	defer e.ext.mu.RUnlock()
	return slices.Clone(e.ext.deciders[channel])
}

func (x *extensions) decides(channel, user string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return slices.Contains(x.deciders[channel], user)
}

// stateEvents maps the state a proposal reached to the event it makes;
// superseded proposals make none (their successor's proposal.created says
// it).
var stateEvents = map[ProposalState]EventType{
	ProposalPending:   EventProposalCreated,
	ProposalApproved:  EventProposalApproved,
	ProposalCancelled: EventProposalCancelled,
	ProposalExpired:   EventProposalExpired,
}

// emit tells the sink that p reached its current state; an approval with a
// newly written board also tells that the board was created.
func (e *Engine) emit(ctx context.Context, p Proposal, boardCreated bool) {
	e.ext.mu.RLock()
	sink := e.ext.sink
	e.ext.mu.RUnlock()
	typ, ok := stateEvents[p.State]
	if sink == nil || !ok {
		return
	}
	evs := []Event{{Type: typ, At: e.deps.Now(), Proposal: p, Actor: p.DecidedBy, BoardID: p.BoardID, BoardURL: p.BoardURL}}
	if boardCreated {
		evs = append(evs, Event{Type: EventBoardCreated, At: evs[0].At, Proposal: p, Actor: p.DecidedBy, BoardID: p.BoardID, BoardURL: p.BoardURL})
	}
	for _, ev := range evs {
		if err := sink.Emit(context.WithoutCancel(ctx), ev); err != nil {
			e.logger.Warn("emit event", "type", ev.Type, "proposal", p.ID, "err", err)
		}
	}
}

// emitCard tells the sink that a card changed; its error is logged.
func (e *Engine) emitCard(ctx context.Context, up board.CardUpdate, user string) {
	e.ext.mu.RLock()
	sink := e.ext.sink
	e.ext.mu.RUnlock()
	if sink == nil {
		return
	}
	ev := Event{Type: EventCardChanged, At: e.deps.Now(), Actor: user, BoardID: up.Board.ID,
		BoardURL: board.BoardURL(e.cfg.PublicURL, up.Board.ID), Card: &up}
	if err := sink.Emit(context.WithoutCancel(ctx), ev); err != nil {
		e.logger.Warn("emit event", "type", ev.Type, "board", up.Board.ID, "err", err)
	}
}

type viaKey struct{}

// WithVia marks ctx as acting through via (e.g. "token:ci"), so the audit
// log records the credential beside the user it acted for.
func WithVia(ctx context.Context, via string) context.Context {
	return context.WithValue(ctx, viaKey{}, via)
}

// Via returns what WithVia set, or "".
func Via(ctx context.Context) string {
	v, _ := ctx.Value(viaKey{}).(string)
	return v
}

// withVia adds the credential of ctx to an audit detail.
func withVia(ctx context.Context, detail map[string]any) map[string]any {
	v := Via(ctx)
	if v == "" {
		return detail
	}
	if detail == nil {
		detail = map[string]any{}
	}
	detail["via"] = v
	return detail
}
