package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
	"github.com/bobnet/bobnet/sse"
)

// ChatEngine is what the chat routes need from the bot engine; *bot.Engine
// is one.
type ChatEngine interface {
	Submit(ctx context.Context, r board.Request) (board.RequestID, error)
	Request(ctx context.Context, id board.RequestID) (board.RequestStatus, error)
	Proposal(ctx context.Context, id board.ProposalID) (board.Proposal, error)
	Approve(ctx context.Context, id board.ProposalID, user string) (board.Approval, error)
	CancelWithReason(ctx context.Context, id board.ProposalID, user, reason string) (board.Proposal, error)
	Withdraw(ctx context.Context, id board.ProposalID, user string) (board.Proposal, error)
	Revise(ctx context.Context, id board.ProposalID, user, feedback string) (board.RequestID, error)
	ProposeAgain(ctx context.Context, id board.ProposalID, user string) (board.RequestID, error)
	// Command answers a chat command (/bobnet …) said in a channel.
	Command(ctx context.Context, c bot.Command) bot.CommandAnswer
}

// Channels are the console's channels as the API shows them: what people
// said is shown there before the engine answers, and each channel's events
// are streamed. *console.Console is one.
type Channels interface {
	Publish(channel, typ string, data any)
	Follow(channel string, lastID int64) (past []sse.Event, live <-chan sse.Event, stop func())
	Channels(ctx context.Context) ([]board.ChannelActivity, error)
}

// Successors finds the proposal that superseded another; *store.Store is
// one.
type Successors interface {
	Successor(ctx context.Context, id board.ProposalID) (board.ProposalID, error)
}

// BoardLister lists boards, newest first, of the channels within
// matches (nil: every channel); *store.Store is one.
type BoardLister interface {
	Boards(ctx context.Context, after board.ID, limit int, within []string) ([]board.Listing, board.ID, error)
}

// RequestReader reads a request's record, with the thread it was made
// in; the request store (*redisstore.InFlight) is one.
type RequestReader interface {
	Request(ctx context.Context, id board.RequestID) (board.RequestRecord, error)
}

// Chat serves talking to the bot as if in a channel: messages, requests,
// proposals and their decisions, the channels and their event streams, and
// the list of boards the console's home shows.
type Chat struct {
	eng        ChatEngine
	channels   Channels
	successors Successors
	boards     BoardLister
	requests   RequestReader
	streams    *sse.Streams
	limits     *clientLimits
	logger     *slog.Logger
}

// ChatDeps are what Chat serves from; every one is needed.
type ChatDeps struct {
	Engine     ChatEngine
	Channels   Channels
	Successors Successors
	Boards     BoardLister
	// Requests are read for a token limited to channels, to check the
	// channel of a request before its status is answered.
	Requests RequestReader
	// Streams caps the channels' event streams, beside the process's
	// other streams.
	Streams *sse.Streams
}

// clientRequests is how many messages, revisions and re-proposals one
// client (a token, or an address without one) may send a minute. The API
// trusts its callers' "user" and channel names, so a limit keyed on those
// names alone would be none: this one is keyed on the caller itself.
const clientRequests = 60

// NewChat returns the chat routes over d.
func NewChat(d ChatDeps, logger *slog.Logger) *Chat {
	return &Chat{eng: d.Engine, channels: d.Channels, successors: d.Successors, boards: d.Boards, requests: d.Requests, streams: d.Streams,
		limits: newClientLimits(clientRequests, time.Minute), logger: logger}
}

// Routes mounts the chat routes; the caller puts the guards in front.
func (c *Chat) Routes(r chi.Router) {
	r.Post("/api/v1/channels/{channel}/messages", c.postMessage)
	r.Get("/api/v1/channels/{channel}/events", c.events)
	r.Get("/api/v1/requests/{id}", c.getRequest)
	r.Get("/api/v1/proposals/{id}", c.getProposal)
	r.Post("/api/v1/proposals/{id}/approve", c.approve)
	r.Post("/api/v1/proposals/{id}/cancel", c.cancel)
	r.Post("/api/v1/proposals/{id}/revise", c.revise)
	r.Post("/api/v1/proposals/{id}/propose-again", c.proposeAgain)
	r.Post("/api/v1/proposals/{id}/withdraw", c.withdraw)
	r.Get("/api/v1/channels", c.listChannels)
	r.Get("/api/v1/boards", c.listBoards)
}

// engineError answers an engine error with its status.
func (c *Chat) engineError(w http.ResponseWriter, err error) { engineError(w, c.logger, err) }

// engineError answers an engine error with its status; an unavailable
// store is logged, not shown.
func engineError(w http.ResponseWriter, logger *slog.Logger, err error) {
	var de *bot.DecidedError
	switch {
	case errors.As(err, &de):
		httpjson.Write(w, http.StatusConflict, map[string]any{"error": err.Error(), "state": de.State, "board_id": de.BoardID, "decided_by": de.By})
	case errors.Is(err, bot.ErrExpired):
		httpjson.Write(w, http.StatusConflict, map[string]any{"error": "this proposal expired; propose it again", "state": board.ProposalExpired})
	case errors.Is(err, bot.ErrNotFound):
		httpjson.Error(w, http.StatusNotFound, err.Error())
	case errors.Is(err, bot.ErrForbidden):
		httpjson.Error(w, http.StatusForbidden, err.Error())
	case errors.Is(err, bot.ErrRateLimited):
		w.Header().Set("Retry-After", "60")
		httpjson.Error(w, http.StatusTooManyRequests, err.Error())
	case errors.Is(err, bot.ErrUnavailable):
		logger.Warn("engine unavailable", "err", err)
		// A moment: a database restarting, a Redis failing over, or no
		// replica confirming a request (docs/operations.md).
		w.Header().Set("Retry-After", "5")
		httpjson.Error(w, http.StatusServiceUnavailable, "BobNet's database is unavailable right now; try again shortly")
	default:
		httpjson.Error(w, http.StatusBadRequest, err.Error())
	}
}
