package bot

import (
	"context"
	"slices"
	"strings"
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
	// EventRunStarted and EventRunFinished: a run of a board began, or
	// ended (done, stopped, timed out).
	EventRunStarted  EventType = "run.started"
	EventRunFinished EventType = "run.finished"
	// EventCardDispatched: a card of a run was handed to another tool
	// (runner hook:<name>), with a token to post its output with; only
	// that hook's callbacks hear it. EventCardOutput: a runner's output
	// for a card was kept.
	EventCardDispatched EventType = "card.dispatched"
	EventCardOutput     EventType = "card.output"
)

// Event is one thing that happened, with the proposal as it stood then.
type Event struct {
	Type     EventType
	At       time.Time
	Proposal board.Proposal
	// Actor is who caused it (the approver, the canceller); empty for
	// expiry and for the planner's proposal.
	Actor    string
	BoardID  board.ID
	BoardURL string
	// Card is what a card.changed event changed; Proposal is empty then.
	Card *board.CardUpdate
	// Run is a run event's run, and RunBoard its board; Proposal is
	// empty then.
	Run      *board.Run
	RunBoard *board.Board
	// Job is the card of a run a card.dispatched or card.output event is
	// about, with its run, board and inputs; Proposal is empty then.
	Job *board.RunJob
	// Hook is the hook whose callbacks hear a card.dispatched event
	// (runner hook:<name>), instead of the channel's.
	Hook string
	// Callback is where and with what a dispatched card's output is
	// posted; set on card.dispatched only.
	Callback *RunCallback
}

// RunCallback is the URL a tool posts a dispatched card's output to and
// the bearer token that lets it, for that card of that run only.
type RunCallback struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// DispatchEvent is the card.dispatched event of job for hook, at the
// time at: its output goes to callback.
func DispatchEvent(job board.RunJob, hook, publicURL string, callback RunCallback, at time.Time) Event {
	return Event{Type: EventCardDispatched, At: at, Actor: "hook:" + hook, BoardID: job.Board.ID,
		BoardURL: board.BoardURL(publicURL, job.Board.ID), Job: &job, Hook: hook, Callback: &callback}
}

// OutputURL is where a dispatched card's output is posted.
func OutputURL(publicURL string, run board.RunID, card board.CardID) string {
	return strings.TrimRight(publicURL, "/") + "/api/v1/runs/" + string(run) + "/cards/" + string(card) + "/output"
}

// CardOutput tells the sink that a runner's output for a card was kept
// (card.output), and the board's thread that it waits for review when it
// went to Review. It is called after the output is committed.
func (e *Engine) CardOutput(ctx context.Context, job board.RunJob, up board.CardUpdate) {
	if up.Card.Status == "Review" {
		e.Reviewing(ctx, job, up)
	}
	e.showRun(job.Run.ID, job.Board)
	sink := e.eventSink()
	if sink == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), emitTimeout)
	defer cancel()
	ev := Event{Type: EventCardOutput, At: e.deps.Now(), Actor: job.RunCard.Runner, BoardID: job.Board.ID,
		BoardURL: board.BoardURL(e.cfg.PublicURL, job.Board.ID), Job: &job}
	if err := sink.Emit(ctx, ev); err != nil {
		e.logger.Warn("emit event", "type", ev.Type, "run", job.Run.ID, "card", job.Card.ID, "err", err)
	}
}

// Channel is the key of the channel the event happened in.
func (ev Event) Channel() string {
	if ev.Job != nil {
		return ev.Job.Board.Channel
	}
	if ev.RunBoard != nil {
		return ev.RunBoard.Channel
	}
	if ev.Card != nil {
		return ev.Card.Board.Channel // the channel the board belongs to
	}
	return ev.Proposal.Thread.Channel.Key()
}

// EventSink hears the engine's events; an outbox is one. Emit runs on the
// decision path, within emitTimeout, so it should be one quick write; its
// error is logged and never undoes the decision.
type EventSink interface {
	Emit(ctx context.Context, ev Event) error
}

// EventEncoder turns events into outbox rows, so a decision writes its
// events in its own transaction: a crash between the commit and Emit
// cannot lose them. Wake tells it rows were written.
type EventEncoder interface {
	Encode(ev Event) ([]board.OutboundEvent, error)
	Wake()
}

// Events is where the engine's events go.
type Events struct {
	Sink EventSink
	// Encoder, when set, writes a decision's events with the decision
	// (the outbox is both); nil: they are emitted to Sink just after it.
	Encoder EventEncoder
}

// emitTimeout bounds handing an event to the sink, on the decider's path.
const emitTimeout = 5 * time.Second

// ChannelDeciders returns the extra deciders of a channel
// (Config.ChannelDeciders).
func (e *Engine) ChannelDeciders(channel string) []string {
	return slices.Clone(e.cfg.ChannelDeciders[channel])
}

// decidesIn says whether user is one of the extra deciders of channel.
func (e *Engine) decidesIn(channel, user string) bool {
	return slices.Contains(e.cfg.ChannelDeciders[channel], user)
}

// stateEvents maps the state a proposal reached to the event it makes;
// superseded proposals make none (their successor's proposal.created says
// it).
var stateEvents = map[board.ProposalState]EventType{
	board.ProposalPending:   EventProposalCreated,
	board.ProposalApproved:  EventProposalApproved,
	board.ProposalCancelled: EventProposalCancelled,
	board.ProposalExpired:   EventProposalExpired,
}

func (e *Engine) eventSink() EventSink { return e.deps.Events.Sink }

func (e *Engine) eventEncoder() EventEncoder { return e.deps.Events.Encoder }

// stateChange is the events of p reaching its current state; an approval
// with a newly written board also tells that the board was created.
func (e *Engine) stateChange(p board.Proposal, boardCreated bool) []Event {
	typ, ok := stateEvents[p.State]
	if !ok {
		return nil
	}
	evs := []Event{{Type: typ, At: e.deps.Now(), Proposal: p, Actor: p.DecidedBy, BoardID: p.BoardID, BoardURL: p.BoardURL}}
	if boardCreated {
		evs = append(evs, Event{Type: EventBoardCreated, At: evs[0].At, Proposal: p, Actor: p.DecidedBy, BoardID: p.BoardID, BoardURL: p.BoardURL})
	}
	return evs
}

// emit tells the sink that p reached its current state.
func (e *Engine) emit(ctx context.Context, p board.Proposal, boardCreated bool) {
	sink := e.eventSink()
	if sink == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), emitTimeout)
	defer cancel()
	for _, ev := range e.stateChange(p, boardCreated) {
		if err := sink.Emit(ctx, ev); err != nil {
			e.logger.Warn("emit event", "type", ev.Type, "proposal", p.ID, "err", err)
		}
	}
}

// encodeEvents is the outbox rows of p's state change, for the decision
// to write in its own transaction; nil when the sink cannot encode them
// (they are emitted after the decision instead).
func (e *Engine) encodeEvents(p board.Proposal) []board.OutboundEvent {
	enc := e.eventEncoder()
	if enc == nil {
		return nil
	}
	out := []board.OutboundEvent{}
	for _, ev := range e.stateChange(p, false) {
		rows, err := enc.Encode(ev)
		if err != nil {
			e.logger.Warn("encode event", "type", ev.Type, "proposal", p.ID, "err", err)
			return nil
		}
		out = append(out, rows...)
	}
	return out
}

// approvalEvents returns what makes the events of user approving p inside
// the approval's transaction (board.Execution.Events), or nil when the
// sink cannot encode them.
func (e *Engine) approvalEvents(p board.Proposal, user string) func(board.ExecResult) ([]board.OutboundEvent, error) {
	enc := e.eventEncoder()
	if enc == nil {
		return nil
	}
	return func(res board.ExecResult) ([]board.OutboundEvent, error) {
		q := p
		q.State, q.DecidedBy, q.DecidedAt = board.ProposalApproved, user, e.deps.Now()
		q.BoardID, q.BoardURL = res.BoardID, board.BoardURL(e.cfg.PublicURL, res.BoardID)
		var out []board.OutboundEvent
		for _, ev := range e.stateChange(q, true) {
			rows, err := enc.Encode(ev)
			if err != nil {
				return nil, err
			}
			out = append(out, rows...)
		}
		return out, nil
	}
}

// emitApproval tells the sink about an approval that committed: wakes
// its sender when the events were written with the approval, or emits
// them now through a sink that cannot encode them. A replay emits
// nothing through an encoder: the first execution wrote the events.
func (e *Engine) emitApproval(ctx context.Context, p board.Proposal, inTx, replayed bool) {
	if inTx {
		if enc := e.eventEncoder(); enc != nil {
			enc.Wake()
		}
		return
	}
	e.emit(ctx, p, !replayed)
}

// wakeEvents makes the sink send events a decision wrote in its own
// transaction.
func (e *Engine) wakeEvents() {
	if enc := e.eventEncoder(); enc != nil {
		enc.Wake()
	}
}

// emitRun tells the sink that a run started or ended; its error is
// logged.
func (e *Engine) emitRun(ctx context.Context, typ EventType, r board.Run, b board.Board) {
	sink := e.eventSink()
	if sink == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), emitTimeout)
	defer cancel()
	ev := Event{Type: typ, At: e.deps.Now(), Actor: r.StartedBy, BoardID: b.ID, BoardURL: board.BoardURL(e.cfg.PublicURL, b.ID), Run: &r, RunBoard: &b}
	if err := sink.Emit(ctx, ev); err != nil {
		e.logger.Warn("emit event", "type", typ, "run", r.ID, "err", err)
	}
}

// emitCard tells the sink that a card changed; its error is logged.
func (e *Engine) emitCard(ctx context.Context, up board.CardUpdate, user string) {
	sink := e.eventSink()
	if sink == nil {
		return
	}
	ev := Event{Type: EventCardChanged, At: e.deps.Now(), Actor: user, BoardID: up.Board.ID,
		BoardURL: board.BoardURL(e.cfg.PublicURL, up.Board.ID), Card: &up}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), emitTimeout)
	defer cancel()
	if err := sink.Emit(ctx, ev); err != nil {
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
