// Package console is BobNet's own surface: the REST API that any client
// can use to talk to the bot as if in a channel, the server-sent event
// stream of each channel, and the web console built on both.
package console

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/sse"
)

// Engine is what the console needs from the bot engine.
type Engine interface {
	Submit(ctx context.Context, r bot.Request) (bot.RequestID, error)
	Request(ctx context.Context, id bot.RequestID) (bot.RequestStatus, error)
	Proposal(ctx context.Context, id bot.ProposalID) (bot.Proposal, error)
	Approve(ctx context.Context, id bot.ProposalID, user string) (bot.Approval, error)
	CancelWithReason(ctx context.Context, id bot.ProposalID, user, reason string) (bot.Proposal, error)
	Revise(ctx context.Context, id bot.ProposalID, user, feedback string) (bot.RequestID, error)
	ProposeAgain(ctx context.Context, id bot.ProposalID, user string) (bot.RequestID, error)
}

//go:embed static
var static embed.FS

// historySize is how many events a channel keeps for a page reload.
const historySize = 200

var (
	channelName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
)

// Console serves the API and the web console, and is the engine's poster
// for console channels.
type Console struct {
	eng    Engine
	logger *slog.Logger
	limits *clientLimits

	mu       sync.Mutex
	channels map[string]*channel
	// streams caps the open event streams per client and in all.
	streams *sse.Streams

	successors Successors // optional: decisions.go
	history    History    // optional: history.go
	boards     BoardLister
}

// New returns a console driving eng.
func New(eng Engine, logger *slog.Logger) *Console {
	return &Console{eng: eng, logger: logger, channels: map[string]*channel{}, streams: sse.New(sse.Limits{}),
		limits: newClientLimits(clientRequests, time.Minute)}
}

// UseStreams counts the channels' event streams against s instead of the
// console's own caps, so one process-wide cap covers them beside other
// streams.
func (c *Console) UseStreams(s *sse.Streams) { c.streams = s }

// Bounds of what one console keeps and serves. The REST API trusts its
// callers' "user" and channel names, so limits keyed on those names alone
// are no limits: these are keyed on the caller itself.
const (
	// maxChannels is how many channels keep history; past it the least
	// recently used channel nobody watches is dropped.
	maxChannels = 1000
	// clientRequests is how many messages, revisions and re-proposals one
	// client (a token, or an address without one) may send a minute.
	clientRequests = 60
)

// Event is one thing shown in a channel.
type Event struct {
	ID   int64  `json:"id"`
	Type string `json:"type"` // message, working, reply, proposal, proposal_updated
	At   string `json:"at"`
	Data any    `json:"data"`
}

// channel is one channel's history and subscribers.
type channel struct {
	nextID   int64
	history  []Event
	subs     map[chan Event]struct{}
	lastUsed time.Time
}

// channel returns a channel's state, creating it (and dropping the least
// recently used unwatched channel when there are too many); c.mu is held.
func (c *Console) channel(name string) *channel {
	ch, ok := c.channels[name]
	if !ok {
		if len(c.channels) >= maxChannels {
			c.dropIdleChannel()
		}
		ch = &channel{nextID: 1, subs: map[chan Event]struct{}{}}
		c.channels[name] = ch
	}
	ch.lastUsed = time.Now()
	return ch
}

// dropIdleChannel forgets the least recently used channel nobody is
// watching; c.mu is held. Its history goes (a browser that reconnects
// later starts afresh); its proposals and boards are elsewhere and stay.
func (c *Console) dropIdleChannel() {
	oldest := ""
	for name, ch := range c.channels {
		if len(ch.subs) == 0 && (oldest == "" || ch.lastUsed.Before(c.channels[oldest].lastUsed)) {
			oldest = name
		}
	}
	if oldest != "" {
		delete(c.channels, oldest)
	}
}

// publish adds an event to a channel and hands it to every subscriber. A
// subscriber too slow to keep up is dropped (its browser reconnects and
// resumes from Last-Event-ID), so the engine never waits on a browser.
func (c *Console) publish(name, typ string, data any) {
	c.load(name)
	ev := c.append(name, typ, data)
	c.keep(name, ev)
}

// append adds an event to a channel in memory and hands it to the
// channel's subscribers.
func (c *Console) append(name, typ string, data any) Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.channel(name)
	ev := Event{ID: ch.nextID, Type: typ, At: time.Now().UTC().Format(time.RFC3339), Data: data}
	ch.nextID++
	ch.history = append(ch.history, ev)
	if len(ch.history) > historySize {
		ch.history = ch.history[len(ch.history)-historySize:]
	}
	for sub := range ch.subs {
		select {
		case sub <- ev:
		default:
			delete(ch.subs, sub)
			close(sub)
		}
	}
	return ev
}

// subscribe returns the events after lastID and a channel of new ones.
func (c *Console) subscribe(name string, lastID int64) ([]Event, chan Event) {
	c.load(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.channel(name)
	var past []Event
	for _, ev := range ch.history {
		if ev.ID > lastID {
			past = append(past, ev)
		}
	}
	sub := make(chan Event, 64)
	ch.subs[sub] = struct{}{}
	return past, sub
}

func (c *Console) unsubscribe(name string, sub chan Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.channels[name] // never created by leaving
	if !ok {
		return
	}
	if _, ok := ch.subs[sub]; ok {
		delete(ch.subs, sub)
		close(sub)
	}
}

// Reply shows a bot reply in the channel.
func (c *Console) Reply(_ context.Context, t bot.Thread, r bot.Reply) error {
	c.publish(t.Channel.ID, "reply", r)
	return nil
}

// PostPreview shows a proposal's preview in the channel.
func (c *Console) PostPreview(_ context.Context, p bot.Proposal) (bot.MessageRef, error) {
	c.publish(p.Thread.Channel.ID, "proposal", proposalJSON(p))
	return bot.MessageRef(p.ID), nil
}

// UpdatePreview shows that a proposal's state changed.
func (c *Console) UpdatePreview(_ context.Context, p bot.Proposal) error {
	c.publish(p.Thread.Channel.ID, "proposal_updated", proposalJSON(p))
	return nil
}

// proposalView is a proposal as the API shows it.
type proposalView struct {
	ID          bot.ProposalID    `json:"id"`
	State       bot.ProposalState `json:"state"`
	Version     int               `json:"version"`
	Supersedes  bot.ProposalID    `json:"supersedes,omitempty"`
	RequestedBy string            `json:"requested_by"`
	Request     string            `json:"request"`
	Plan        any               `json:"plan"`
	Warnings    any               `json:"warnings"`
	Changes     *bot.Changes      `json:"changes,omitempty"`
	// BoardChanges are what approving would change on the current board.
	BoardChanges []bot.BoardChange `json:"board_changes,omitempty"`
	ExpiresAt    time.Time         `json:"expires_at"`
	DecidedBy    string            `json:"decided_by,omitempty"`
	Reason       string            `json:"reason,omitempty"`
	BoardID      board.ID          `json:"board_id,omitempty"`
	BoardURL     string            `json:"board_url,omitempty"`
	Channel      string            `json:"channel"`
	// Quorum is the policy the proposal was made under and its approvals.
	Quorum *bot.Quorum `json:"quorum,omitempty"`
}

func proposalJSON(p bot.Proposal) proposalView {
	return proposalView{
		ID: p.ID, State: p.State, Version: p.Version, Supersedes: p.Supersedes, RequestedBy: p.RequestedBy, Request: p.Request,
		Plan: p.Plan, Warnings: p.Warnings, Changes: p.Changes, BoardChanges: p.BoardChanges, ExpiresAt: p.ExpiresAt, DecidedBy: p.DecidedBy, Reason: p.Reason,
		BoardID: p.BoardID, BoardURL: p.BoardURL, Channel: p.Thread.Channel.ID, Quorum: p.Quorum,
	}
}

// APIRoutes mounts the REST API and the event stream.
func (c *Console) APIRoutes(r chi.Router) {
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

// PageRoutes mounts the web console at / and /c/{channel}.
func (c *Console) PageRoutes(r chi.Router) {
	sub, _ := fs.Sub(static, "static")
	files := http.FileServerFS(sub)
	index := func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, sub, "index.html")
	}
	r.Get("/", SecurityHeaders(http.HandlerFunc(index)).ServeHTTP)
	r.Get("/c/{channel}", SecurityHeaders(http.HandlerFunc(index)).ServeHTTP)
	r.Get("/proposals/{id}", SecurityHeaders(http.HandlerFunc(c.proposalHTML)).ServeHTTP)
	// The files under /static/ include the console's HTML itself, which
	// must not be framed from that address either.
	r.Handle("/static/*", SecurityHeaders(http.StripPrefix("/static/", files)))
}

// userMessage is an engine error as a sentence for people: what happened
// and what to do, never the internals behind it.
func userMessage(err error) string {
	switch {
	case errors.Is(err, bot.ErrUnavailable):
		return "BobNet's database is unavailable right now; try again shortly."
	case errors.Is(err, bot.ErrRateLimited):
		return "too many requests; try again in a minute."
	}
	return "it could not be accepted; try again."
}

// engineError answers an engine error with its status.
func (c *Console) engineError(w http.ResponseWriter, err error) {
	var de *bot.DecidedError
	switch {
	case errors.As(err, &de):
		httpapi.WriteJSON(w, http.StatusConflict, map[string]any{"error": err.Error(), "state": de.State, "board_id": de.BoardID, "decided_by": de.By})
	case errors.Is(err, bot.ErrExpired):
		httpapi.WriteJSON(w, http.StatusConflict, map[string]any{"error": "this proposal expired; propose it again", "state": bot.ProposalExpired})
	case errors.Is(err, bot.ErrNotFound):
		httpapi.WriteError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, bot.ErrForbidden):
		httpapi.WriteError(w, http.StatusForbidden, err.Error())
	case errors.Is(err, bot.ErrRateLimited):
		w.Header().Set("Retry-After", "60")
		httpapi.WriteError(w, http.StatusTooManyRequests, err.Error())
	case errors.Is(err, bot.ErrUnavailable):
		c.logger.Warn("engine unavailable", "err", err)
		httpapi.WriteError(w, http.StatusServiceUnavailable, "BobNet's database is unavailable right now; try again shortly")
	default:
		httpapi.WriteError(w, http.StatusBadRequest, err.Error())
	}
}

func (c *Console) postMessage(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "channel")
	if !channelName.MatchString(name) {
		httpapi.WriteError(w, http.StatusBadRequest, "channel names are 1 to 64 lower-case letters, digits, - or _, starting with a letter or digit")
		return
	}
	var body struct {
		User string `json:"user"`
		Text string `json:"text"`
	}
	if !httpapi.Decode(w, r, &body) || !httpapi.ValidUser(w, r, body.User) || !c.allow(w, r) {
		return
	}
	body.Text = strings.TrimSpace(body.Text)
	if body.Text == "" || len(body.Text) > 8000 {
		httpapi.WriteError(w, http.StatusBadRequest, `"text" is required, at most 8000 characters`)
		return
	}
	if !httpapi.PlainText(w, "text", body.Text) {
		return
	}
	ch := bot.Channel{Source: bot.SourceConsole, ID: name}
	// Each console message starts its own thread, named after it.
	thread := bot.Thread{Channel: ch, ID: strconv.FormatInt(time.Now().UnixNano(), 36)}
	// The message is shown before it is submitted, so no answer to it can
	// reach the channel first; a refusal is shown after it.
	id := bot.NewRequestID()
	c.publish(name, "message", map[string]any{"user": body.User, "text": body.Text, "request_id": id})
	c.publish(name, "working", map[string]any{"request_id": id})
	got, err := c.eng.Submit(r.Context(), bot.Request{ID: id, Thread: thread, User: body.User, Text: body.Text})
	if err != nil {
		if !errors.Is(err, bot.ErrRateLimited) { // the engine tells a throttled person itself
			c.publish(name, "reply", bot.Reply{Kind: bot.ReplyError, Text: "That message was not taken: " + userMessage(err)})
		}
		c.engineError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusAccepted, map[string]any{"request_id": got})
}

func (c *Console) getRequest(w http.ResponseWriter, r *http.Request) {
	id, err := bot.ParseRequestID(chi.URLParam(r, "id"))
	var st bot.RequestStatus
	if err == nil {
		st, err = c.eng.Request(r.Context(), id)
	}
	if err != nil {
		c.engineError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, st)
}

func (c *Console) getProposal(w http.ResponseWriter, r *http.Request) {
	id, err := bot.ParseProposalID(chi.URLParam(r, "id"))
	var p bot.Proposal
	if err == nil {
		p, err = c.eng.Proposal(r.Context(), id)
	}
	if err != nil {
		c.engineError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, proposalJSON(p))
}

type decision struct {
	User     string `json:"user"`
	Feedback string `json:"feedback,omitempty"`
	Reason   string `json:"reason,omitempty"` // cancel's, optional
}

// decision reads a decision's body and the proposal id in its URL. When
// either is wrong it has already answered and reports false; a malformed id
// is answered as an unknown proposal is.
func (c *Console) decision(w http.ResponseWriter, r *http.Request) (bot.ProposalID, decision, bool) {
	var d decision
	if !httpapi.Decode(w, r, &d) || !httpapi.ValidUser(w, r, d.User) {
		return "", d, false
	}
	id, err := bot.ParseProposalID(chi.URLParam(r, "id"))
	if err != nil {
		c.engineError(w, err)
		return "", d, false
	}
	return id, d, true
}

func (c *Console) approve(w http.ResponseWriter, r *http.Request) {
	id, d, ok := c.decision(w, r)
	if !ok {
		return
	}
	a, err := c.eng.Approve(r.Context(), id, d.User)
	if err != nil {
		c.decisionError(w, r, id, d.User, err)
		return
	}
	if a.State == bot.ProposalPending {
		httpapi.WriteJSON(w, http.StatusOK, map[string]any{"state": a.State, "approvals": a.Approvals, "needed": a.Needed})
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"board_id": a.BoardID, "board_url": a.BoardURL})
}

func (c *Console) cancel(w http.ResponseWriter, r *http.Request) {
	id, d, ok := c.decision(w, r)
	if !ok {
		return
	}
	if !validReason(w, d.Reason) { // decisions.go
		return
	}
	p, err := c.eng.CancelWithReason(r.Context(), id, d.User, d.Reason)
	if err != nil {
		c.decisionError(w, r, id, d.User, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, proposalJSON(p))
}

func (c *Console) revise(w http.ResponseWriter, r *http.Request) {
	id, d, ok := c.decision(w, r)
	if !ok {
		return
	}
	if strings.TrimSpace(d.Feedback) == "" || len(d.Feedback) > 8000 {
		httpapi.WriteError(w, http.StatusBadRequest, `"feedback" is required: say what to change (at most 8000 characters)`)
		return
	}
	if !httpapi.PlainText(w, "feedback", d.Feedback) {
		return
	}
	if !c.allow(w, r) {
		return
	}
	rid, err := c.eng.Revise(r.Context(), id, d.User, d.Feedback)
	if err != nil {
		c.decisionError(w, r, id, d.User, err)
		return
	}
	// Everyone watching the channel sees what was asked, as in a chat.
	if p, err := c.eng.Proposal(r.Context(), id); err == nil && p.Thread.Channel.Source == bot.SourceConsole {
		c.publish(p.Thread.Channel.ID, "message", map[string]any{"user": d.User, "text": d.Feedback, "request_id": rid, "revises": id})
	}
	httpapi.WriteJSON(w, http.StatusAccepted, map[string]any{"request_id": rid})
}

func (c *Console) proposeAgain(w http.ResponseWriter, r *http.Request) {
	id, d, ok := c.decision(w, r)
	if !ok || !c.allow(w, r) {
		return
	}
	rid, err := c.eng.ProposeAgain(r.Context(), id, d.User)
	if err != nil {
		c.engineError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusAccepted, map[string]any{"request_id": rid})
}

func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "channel")
	if !channelName.MatchString(name) {
		httpapi.WriteError(w, http.StatusBadRequest, "bad channel name")
		return
	}
	st, ok := c.streams.Open(w, r)
	if !ok {
		return
	}
	defer st.Close()
	lastID, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	past, sub := c.subscribe(name, lastID)
	defer c.unsubscribe(name, sub)
	send := func(ev Event) error { return st.Send(strconv.FormatInt(ev.ID, 10), ev.Type, ev) }
	for _, ev := range past {
		if send(ev) != nil {
			return
		}
	}
	// A closed subscription means the browser fell behind: it reconnects
	// and resumes from Last-Event-ID.
	_ = sse.Pump(r.Context(), st, sub, send)
}
