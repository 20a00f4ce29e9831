package bot

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/planner"
)

// Planner drafts a plan for a request; *planner.Client is one.
type Planner interface {
	Plan(ctx context.Context, in planner.PromptInput, opts planner.Options) (planner.Outcome, error)
}

// Boards is the part of the board store the engine uses; *board.Store is
// one.
type Boards interface {
	Execute(ctx context.Context, ex board.Execution) (board.ExecResult, error)
	ChannelBoard(ctx context.Context, channel string) (board.Board, error)
	BoardSummary(ctx context.Context, id board.ID) (planner.BoardSummary, error)
	Status(ctx context.Context, id board.ID) (board.Status, error)
	RecordAudit(ctx context.Context, e board.AuditEvent) error
	SaveProposal(ctx context.Context, p board.ProposalRecord) error
	SetProposalState(ctx context.Context, id, state, decidedBy string) error
	Proposal(ctx context.Context, id string) (board.ProposalRecord, error)
	Ping(ctx context.Context) error
}

// Proposals keeps pending proposals with their expiry and the claim that
// lets one decision win; *pending.Store is one.
type Proposals interface {
	PutProposal(ctx context.Context, p Proposal) error
	Proposal(ctx context.Context, id ProposalID) (Proposal, error)
	Claim(ctx context.Context, id ProposalID, holder string, ttl time.Duration) (bool, error)
	Release(ctx context.Context, id ProposalID) error
	DueExpiries(ctx context.Context, now time.Time, limit int) ([]ProposalID, error)
	RemoveExpiry(ctx context.Context, id ProposalID) error
	Ping(ctx context.Context) error
}

// Requests keeps request records, dedupe keys, rate limits and thread
// history; *pending.Store is one.
type Requests interface {
	PutRequest(ctx context.Context, r RequestRecord) error
	Request(ctx context.Context, id RequestID) (RequestRecord, error)
	Dedupe(ctx context.Context, key string, id RequestID, ttl time.Duration) (RequestID, bool, error)
	Allow(ctx context.Context, key string, limit RateLimit) (bool, error)
	MarkAnswered(ctx context.Context, id RequestID) (bool, error)
	AppendTurn(ctx context.Context, thread string, t planner.Turn) error
	Turns(ctx context.Context, thread string) ([]planner.Turn, error)
}

// Queue hands requests to workers; *pending.Queue is one.
type Queue interface {
	Init(ctx context.Context) error
	Enqueue(ctx context.Context, id RequestID) error
	Read(ctx context.Context, consumer string, block time.Duration) ([]Delivery, error)
	Reclaim(ctx context.Context, consumer string, idle time.Duration) ([]Delivery, error)
	Ack(ctx context.Context, messageID string) error
}

// Config is how the engine behaves.
type Config struct {
	ProposalTTL        time.Duration // default 24h
	Admins             []string
	AnyMemberMayDecide bool
	PublicURL          string
	Workers            int // default 4
	UserRate           RateLimit
	ChannelRate        RateLimit
	Profiles           []planner.Profile
	ConsumerName       string        // default host-pid
	ReclaimIdle        time.Duration // default 1m
	SweepInterval      time.Duration // default 5s
}

// Deps are what the engine works with.
type Deps struct {
	Planner   Planner
	Boards    Boards
	Proposals Proposals
	Requests  Requests
	Queue     Queue
	Now       func() time.Time
}

// Engine turns requests into proposals and decisions into boards.
type Engine struct {
	cfg    Config
	deps   Deps
	logger *slog.Logger

	mu      sync.RWMutex
	posters map[Source]Poster
}

// New returns an engine. Nothing runs until Run.
func New(cfg Config, deps Deps, logger *slog.Logger) (*Engine, error) {
	if deps.Planner == nil || deps.Boards == nil || deps.Proposals == nil || deps.Requests == nil || deps.Queue == nil {
		return nil, errors.New("bot: planner, boards, proposals, requests and queue are all required")
	}
	if cfg.ProposalTTL <= 0 {
		cfg.ProposalTTL = 24 * time.Hour
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.ConsumerName == "" {
		host, _ := os.Hostname()
		cfg.ConsumerName = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if cfg.ReclaimIdle <= 0 {
		cfg.ReclaimIdle = time.Minute
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = 5 * time.Second
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	return &Engine{cfg: cfg, deps: deps, logger: logger, posters: map[Source]Poster{}}, nil
}

// SetPoster registers the poster of a surface.
func (e *Engine) SetPoster(src Source, p Poster) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.posters[src] = p
}

func (e *Engine) poster(src Source) Poster {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if p, ok := e.posters[src]; ok {
		return p
	}
	return discard{}
}

// discard is the poster of a surface nobody registered: its messages go
// nowhere, but the engine's work (and audit) still happens.
type discard struct{}

func (discard) Reply(context.Context, Thread, Reply) error                { return nil }
func (discard) PostPreview(context.Context, Proposal) (MessageRef, error) { return "", nil }
func (discard) UpdatePreview(context.Context, Proposal) error             { return nil }

func newID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// Ready reports whether Redis and Postgres answer.
func (e *Engine) Ready(ctx context.Context) error {
	return errors.Join(e.deps.Proposals.Ping(ctx), e.deps.Boards.Ping(ctx))
}

// unavailable marks an infrastructure error as ErrUnavailable unless it
// already says what it is.
func unavailable(op string, err error) error {
	if errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}

// Submit queues a request and returns at once. A request whose DedupeKey
// was seen returns the first request's id. Too many requests from a user or
// channel give ErrRateLimited, after a "slow down" reply in the thread.
func (e *Engine) Submit(ctx context.Context, r Request) (RequestID, error) {
	r.Text = strings.TrimSpace(r.Text)
	if r.Text == "" && r.Revises == "" && r.Again == "" {
		return "", errors.New("empty request")
	}
	if r.ID == "" {
		r.ID = RequestID(newID("r_"))
	}
	if r.ReceivedAt.IsZero() {
		r.ReceivedAt = e.deps.Now()
	}
	if r.DedupeKey != "" {
		first, isNew, err := e.deps.Requests.Dedupe(ctx, r.Thread.Channel.Key()+":"+r.DedupeKey, r.ID, 24*time.Hour)
		if err != nil {
			return "", unavailable("submit", err)
		}
		if !isNew {
			return first, nil
		}
	}
	for _, lim := range []struct {
		key   string
		limit RateLimit
		who   string
	}{
		{"user:" + string(r.Thread.Channel.Source) + ":" + r.User, e.cfg.UserRate, "you"},
		{"channel:" + r.Thread.Channel.Key(), e.cfg.ChannelRate, "this channel"},
	} {
		ok, err := e.deps.Requests.Allow(ctx, lim.key, lim.limit)
		if err != nil {
			return "", unavailable("submit", err)
		}
		if !ok {
			text := fmt.Sprintf("Slow down: %s sent more than %d requests in %s. Try again in a moment.", lim.who, lim.limit.N, lim.limit.Per)
			if err := e.poster(r.Thread.Channel.Source).Reply(ctx, r.Thread, Reply{Kind: ReplySlowDown, Text: text}); err != nil {
				e.logger.Warn("post slow-down reply", "err", err)
			}
			return "", fmt.Errorf("%w: %s", ErrRateLimited, text)
		}
	}
	rec := RequestRecord{Request: r, Status: RequestStatus{ID: r.ID, State: RequestQueued}}
	if err := e.deps.Requests.PutRequest(ctx, rec); err != nil {
		return "", unavailable("submit", err)
	}
	if err := e.deps.Queue.Enqueue(ctx, r.ID); err != nil {
		return "", unavailable("submit", err)
	}
	e.audit(ctx, board.AuditEvent{Actor: r.User, Action: "requested", Channel: r.Thread.Channel.Key()},
		map[string]any{"request_id": r.ID, "source": r.Thread.Channel.Source, "revises": r.Revises, "again": r.Again})
	return r.ID, nil
}

// Request returns where a request stands. ErrNotFound when unknown.
func (e *Engine) Request(ctx context.Context, id RequestID) (RequestStatus, error) {
	rec, err := e.deps.Requests.Request(ctx, id)
	if err != nil {
		return RequestStatus{}, err
	}
	return rec.Status, nil
}

// Proposal returns a proposal from Redis, or its history from Postgres
// once Redis has let it go. ErrNotFound when neither knows it.
func (e *Engine) Proposal(ctx context.Context, id ProposalID) (Proposal, error) {
	p, err := e.deps.Proposals.Proposal(ctx, id)
	if err == nil {
		if p.State == ProposalPending && !e.deps.Now().Before(p.ExpiresAt) {
			p.State = ProposalExpired
		}
		return p, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return Proposal{}, err
	}
	return e.proposalFromHistory(ctx, id)
}

// proposalFromHistory rebuilds a proposal from its Postgres record. A
// record still "pending" whose Redis copy is gone has expired: Redis losing
// a proposal never leaves it approvable.
func (e *Engine) proposalFromHistory(ctx context.Context, id ProposalID) (Proposal, error) {
	rec, err := e.deps.Boards.Proposal(ctx, string(id))
	if errors.Is(err, board.ErrNotFound) {
		return Proposal{}, fmt.Errorf("proposal %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Proposal{}, unavailable("read proposal", err)
	}
	p := Proposal{
		ID: id, Version: rec.Version, Supersedes: ProposalID(rec.Supersedes), RequestedBy: rec.RequestedBy,
		State: ProposalState(rec.State), CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt, DecidedBy: rec.DecidedBy,
		DecidedAt: rec.DecidedAt, BoardID: rec.BoardID,
	}
	if ch, cid, ok := strings.Cut(rec.Channel, ":"); ok {
		p.Thread.Channel = Channel{Source: Source(ch), ID: cid}
	}
	_ = json.Unmarshal(rec.Plan, &p.Plan)
	if p.State == ProposalPending {
		p.State = ProposalExpired
	}
	if p.BoardID != "" {
		p.BoardURL = board.BoardURL(e.cfg.PublicURL, p.BoardID)
	}
	return p, nil
}

// mayDecide says whether user may approve, revise or cancel p.
func (e *Engine) mayDecide(p Proposal, user string) bool {
	return e.cfg.AnyMemberMayDecide || user == p.RequestedBy || slices.Contains(e.cfg.Admins, user)
}

// pendingForDecision loads a proposal and checks that user may decide it
// now. ErrNotFound, ErrExpired, *DecidedError or ErrForbidden otherwise.
func (e *Engine) pendingForDecision(ctx context.Context, id ProposalID, user, action string) (Proposal, error) {
	p, err := e.Proposal(ctx, id)
	if err != nil {
		return Proposal{}, err
	}
	switch p.State {
	case ProposalPending:
	case ProposalExpired:
		return p, fmt.Errorf("proposal %s: %w", id, ErrExpired)
	default:
		return p, &DecidedError{State: p.State, By: p.DecidedBy, BoardID: p.BoardID}
	}
	if !e.mayDecide(p, user) {
		e.audit(ctx, board.AuditEvent{Actor: user, Action: "denied", Channel: p.Thread.Channel.Key(), ProposalID: string(id)},
			map[string]any{"attempted": action, "version": p.Version})
		return p, fmt.Errorf("%s proposal %s: %w: only the requester or an admin may", action, id, ErrForbidden)
	}
	return p, nil
}

// Authorize reports whether user may decide the pending proposal id, and
// returns it. Slack asks before it opens the Revise dialog.
func (e *Engine) Authorize(ctx context.Context, id ProposalID, user string) (Proposal, error) {
	return e.pendingForDecision(ctx, id, user, "decide")
}

// claimTTL bounds how long a decision may hold a proposal: longer than any
// transaction should take, short enough that a crashed holder frees it.
const claimTTL = 2 * time.Minute

// claim takes the decision lock of a pending proposal; a loser gets a
// *DecidedError naming what is happening to it.
func (e *Engine) claim(ctx context.Context, id ProposalID, holder string) error {
	ok, err := e.deps.Proposals.Claim(ctx, id, holder, claimTTL)
	if err != nil {
		return unavailable("claim proposal", err)
	}
	if !ok {
		p, err := e.Proposal(ctx, id)
		if err == nil && p.State != ProposalPending {
			return &DecidedError{State: p.State, By: p.DecidedBy, BoardID: p.BoardID}
		}
		return &DecidedError{State: "being decided"}
	}
	return nil
}

// Approve executes a pending proposal's plan, once. The first approver
// wins; every later approve or cancel gets a *DecidedError naming the
// state and board. When the execution fails the claim is given back, so
// approving again can succeed.
func (e *Engine) Approve(ctx context.Context, id ProposalID, user string) (Approval, error) {
	p, err := e.pendingForDecision(ctx, id, user, "approve")
	if err != nil {
		return Approval{}, err
	}
	if err := e.claim(ctx, id, "approve:"+user); err != nil {
		return Approval{}, err
	}
	// Re-read under the claim: the proposal may have changed between the
	// first read and the claim.
	if p, err = e.pendingForDecision(ctx, id, user, "approve"); err != nil {
		_ = e.deps.Proposals.Release(ctx, id)
		return Approval{}, err
	}
	res, err := e.deps.Boards.Execute(ctx, board.Execution{
		ProposalID: string(id), Channel: p.Thread.Channel.Key(), Thread: p.Thread.ID, RequestedBy: p.RequestedBy, ApprovedBy: user, Plan: p.Plan,
	})
	if err != nil {
		if rerr := e.deps.Proposals.Release(ctx, id); rerr != nil {
			e.logger.Warn("release claim", "proposal", id, "err", rerr)
		}
		if errors.Is(err, board.ErrNoTargetBoard) {
			return Approval{}, fmt.Errorf("approve %s: this channel has no board to add the cards to any more: %w", id, err)
		}
		if errors.Is(err, board.ErrProposalClosed) {
			return Approval{}, &DecidedError{State: ProposalCancelled}
		}
		return Approval{}, unavailable("approve "+string(id), err)
	}
	now := e.deps.Now()
	p.State, p.DecidedBy, p.DecidedAt = ProposalApproved, user, now
	p.BoardID, p.BoardURL = res.BoardID, board.BoardURL(e.cfg.PublicURL, res.BoardID)
	if err := e.deps.Proposals.PutProposal(ctx, p); err != nil {
		// The board exists and Postgres says approved; Redis catching up
		// later changes nothing a user can do.
		e.logger.Warn("record approval in redis", "proposal", id, "err", err)
	}
	e.audit(ctx, board.AuditEvent{Actor: user, Action: "approved", Channel: p.Thread.Channel.Key(), ProposalID: string(id), BoardID: res.BoardID},
		map[string]any{"version": p.Version, "supersedes": p.Supersedes, "cards": res.Cards, "links": res.Links, "replayed": res.Replayed})
	poster := e.poster(p.Thread.Channel.Source)
	if err := poster.UpdatePreview(ctx, p); err != nil {
		e.logger.Warn("update preview", "proposal", id, "err", err)
	}
	text := approvalText(user, now, p, res)
	if err := poster.Reply(ctx, p.Thread, Reply{Kind: ReplyInfo, Text: text, BoardURL: p.BoardURL}); err != nil {
		e.logger.Warn("post approval reply", "proposal", id, "err", err)
	}
	return Approval{ProposalID: id, BoardID: res.BoardID, BoardURL: p.BoardURL}, nil
}

// Cancel closes a pending proposal without writing anything.
func (e *Engine) Cancel(ctx context.Context, id ProposalID, user string) (Proposal, error) {
	return e.close(ctx, id, user, ProposalCancelled, "cancelled")
}

// close moves a pending proposal to a closed state under its claim.
func (e *Engine) close(ctx context.Context, id ProposalID, user string, state ProposalState, action string) (Proposal, error) {
	if _, err := e.pendingForDecision(ctx, id, user, action); err != nil {
		return Proposal{}, err
	}
	if err := e.claim(ctx, id, action+":"+user); err != nil {
		return Proposal{}, err
	}
	p, err := e.pendingForDecision(ctx, id, user, action)
	if err != nil {
		_ = e.deps.Proposals.Release(ctx, id)
		return Proposal{}, err
	}
	return e.finish(ctx, p, state, user, action)
}

// finish records a closed proposal everywhere; the caller holds its claim,
// which stays taken so nothing else decides it.
func (e *Engine) finish(ctx context.Context, p Proposal, state ProposalState, user, action string) (Proposal, error) {
	if err := e.deps.Boards.SetProposalState(ctx, string(p.ID), string(state), user); err != nil && !errors.Is(err, board.ErrNotFound) {
		_ = e.deps.Proposals.Release(ctx, p.ID)
		if errors.Is(err, board.ErrProposalClosed) {
			return p, &DecidedError{State: "decided"}
		}
		return p, unavailable(action+" "+string(p.ID), err)
	}
	p.State, p.DecidedBy, p.DecidedAt = state, user, e.deps.Now()
	if err := e.deps.Proposals.PutProposal(ctx, p); err != nil {
		e.logger.Warn("record "+action+" in redis", "proposal", p.ID, "err", err)
	}
	e.audit(ctx, board.AuditEvent{Actor: user, Action: action, Channel: p.Thread.Channel.Key(), ProposalID: string(p.ID)},
		map[string]any{"version": p.Version, "supersedes": p.Supersedes})
	if err := e.poster(p.Thread.Channel.Source).UpdatePreview(ctx, p); err != nil {
		e.logger.Warn("update preview", "proposal", p.ID, "err", err)
	}
	return p, nil
}

// Revise queues a re-plan of a pending proposal with the user's feedback;
// the new proposal supersedes it.
func (e *Engine) Revise(ctx context.Context, id ProposalID, user, feedback string) (RequestID, error) {
	feedback = strings.TrimSpace(feedback)
	if feedback == "" {
		return "", errors.New("revise: say what to change")
	}
	p, err := e.pendingForDecision(ctx, id, user, "revise")
	if err != nil {
		return "", err
	}
	return e.Submit(ctx, Request{Thread: p.Thread, User: user, Text: feedback, Revises: id, Feedback: feedback})
}

// ProposeAgain offers an expired proposal's plan again as a new pending
// proposal, after validating it against the board as it is now.
func (e *Engine) ProposeAgain(ctx context.Context, id ProposalID, user string) (RequestID, error) {
	p, err := e.Proposal(ctx, id)
	if err != nil {
		return "", err
	}
	if p.State != ProposalExpired {
		return "", &DecidedError{State: p.State, By: p.DecidedBy, BoardID: p.BoardID}
	}
	if !e.mayDecide(p, user) {
		return "", fmt.Errorf("propose %s again: %w: only the requester or an admin may", id, ErrForbidden)
	}
	return e.Submit(ctx, Request{Thread: p.Thread, User: user, Text: "propose again", Again: id})
}

// ChannelStatus summarizes the channel's current board. ErrNotFound when
// the channel has none.
func (e *Engine) ChannelStatus(ctx context.Context, ch Channel) (board.Status, error) {
	b, err := e.deps.Boards.ChannelBoard(ctx, ch.Key())
	if errors.Is(err, board.ErrNotFound) {
		return board.Status{}, fmt.Errorf("channel %s: %w", ch.Key(), ErrNotFound)
	}
	if err != nil {
		return board.Status{}, unavailable("channel status", err)
	}
	return e.BoardStatus(ctx, b.ID)
}

// BoardStatus summarizes a board. ErrNotFound when there is none.
func (e *Engine) BoardStatus(ctx context.Context, id board.ID) (board.Status, error) {
	st, err := e.deps.Boards.Status(ctx, id)
	if errors.Is(err, board.ErrNotFound) {
		return board.Status{}, fmt.Errorf("board %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return board.Status{}, unavailable("board status", err)
	}
	return st, nil
}

// audit records an event with detail; a failure is logged, not returned,
// because the decision it records has already happened.
func (e *Engine) audit(ctx context.Context, ev board.AuditEvent, detail map[string]any) {
	if detail != nil {
		ev.Detail, _ = json.Marshal(detail)
	}
	if err := e.deps.Boards.RecordAudit(context.WithoutCancel(ctx), ev); err != nil {
		e.logger.Warn("record audit event", "action", ev.Action, "err", err)
	}
}
