package bot

import (
	"context"
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
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
)

// Planner drafts a plan for a request; *planner.Client is one.
type Planner interface {
	Plan(ctx context.Context, in planner.PromptInput, opts plan.Options) (planner.Outcome, error)
}

// Boards is the part of the board store the engine uses; *store.Store is
// one.
type Boards interface {
	Execute(ctx context.Context, ex board.Execution) (board.ExecResult, error)
	ChannelBoard(ctx context.Context, channel string) (board.Board, error)
	BoardSummary(ctx context.Context, id board.ID) (plan.BoardSummary, error)
	Status(ctx context.Context, id board.ID) (board.Status, error)
	RecordAudit(ctx context.Context, e board.AuditEvent) error
	SaveProposal(ctx context.Context, p board.ProposalRecord) error
	SetProposalState(ctx context.Context, p board.ProposalRecord, state, decidedBy string) error
	Proposal(ctx context.Context, id ProposalID) (board.ProposalRecord, error)
	// RecordDelivery records a webhook delivery's first request, or
	// returns the one recorded before.
	RecordDelivery(ctx context.Context, d board.Delivery) (board.DeliveryResult, error)
}

// Proposals keeps pending proposals with their expiry and the claim that
// lets one decision win; *pending.Store is one.
type Proposals interface {
	PutProposal(ctx context.Context, p Proposal) error
	// PutDecision records p's decision (state, decider, time, board) and
	// takes it off the expiry schedule, without writing the plan again.
	PutDecision(ctx context.Context, p Proposal) error
	// SetPreviewMessage records where the preview was posted, apart from
	// the rest of the proposal (which a decision may be rewriting at the
	// same moment); Proposal and ClaimProposal return it in Message. It
	// reports whether PreviewMessage found none meanwhile.
	SetPreviewMessage(ctx context.Context, id ProposalID, ref MessageRef, expires time.Time) (missed bool, err error)
	// PreviewMessage returns where the preview was posted; "" (noted as a
	// miss for SetPreviewMessage) while it is still being posted.
	PreviewMessage(ctx context.Context, id ProposalID, expires time.Time) (MessageRef, error)
	Proposal(ctx context.Context, id ProposalID) (Proposal, error)
	Claim(ctx context.Context, id ProposalID, holder string, ttl time.Duration) (bool, error)
	ClaimProposal(ctx context.Context, id ProposalID, holder string, ttl time.Duration) (Proposal, bool, error)
	// Release gives holder's claim back; a claim someone else holds is
	// left (ErrNotHolder).
	Release(ctx context.Context, id ProposalID, holder string) error
	// RenewClaim extends holder's claim to ttl from now; ErrNotHolder when
	// holder no longer holds it.
	RenewClaim(ctx context.Context, id ProposalID, holder string, ttl time.Duration) error
	DueExpiries(ctx context.Context, now time.Time, limit int) ([]ProposalID, error)
	RemoveExpiry(ctx context.Context, id ProposalID) error
}

// Requests keeps request records, dedupe keys, rate limits and thread
// history; *pending.Store is one.
type Requests interface {
	Admit(ctx context.Context, a Admission) (AdmitResult, error)
	Allow(ctx context.Context, key string, limit RateLimit) (bool, error)
	PutRequest(ctx context.Context, r RequestRecord) error
	Request(ctx context.Context, id RequestID) (RequestRecord, error)
	AppendTurn(ctx context.Context, thread string, t plan.Turn) error
	Turns(ctx context.Context, thread string) ([]plan.Turn, error)
}

// Queue hands requests to workers; *pending.Queue is one.
type Queue interface {
	Init(ctx context.Context) error
	Read(ctx context.Context, consumer string, block time.Duration) ([]Delivery, error)
	Reclaim(ctx context.Context, consumer string, idle time.Duration) ([]Delivery, error)
	Renew(ctx context.Context, consumer string, messageIDs []string) error
	Ack(ctx context.Context, messageID string) error
}

// Config is how the engine behaves.
type Config struct {
	ProposalTTL        time.Duration // default 24h
	Admins             []string
	AnyMemberMayDecide bool
	PublicURL          string
	Workers            int // default 4
	// RunDeadline is how long a run started from chat may take; 23h by
	// default.
	RunDeadline   time.Duration
	UserRate      RateLimit
	ChannelRate   RateLimit
	Profiles      []planner.Profile
	ConsumerName  string        // default host-pid
	ReclaimIdle   time.Duration // default 1m; workers renew their lease three times as often
	SweepInterval time.Duration // default 5s
	// ClaimTTL is how long a decision's claim on a proposal lives unless
	// its holder renews it (default 10s): the holder renews it every
	// third of that while it works, so a crashed holder's claim frees
	// itself within seconds however long a live decision takes (claim.go).
	// Decisions stay exactly-once without it: every change of a proposal's
	// state is a compare-and-set in Postgres under its chain's lock.
	ClaimTTL time.Duration
	// PostTimeout bounds each call to a platform (default 10s).
	PostTimeout time.Duration
	// FlushTimeout is how long a stopping engine keeps posting the
	// messages still queued (default 10s).
	FlushTimeout time.Duration
	// ChannelNotices is how many throttled people of one channel are told
	// "slow down" per channel window (default 5).
	ChannelNotices int
}

// Deps are what the engine works with.
type Deps struct {
	Planner   Planner
	Boards    Boards
	Proposals Proposals
	Requests  Requests
	Queue     Queue
	// Runs starts and lists the runs of boards; nil: this BobNet does not
	// run boards, and chat says so.
	Runs     RunStore
	Now      func() time.Time
	Observer Observer // optional: told what happens, for metrics
}

// decisionTimeout bounds one approval or cancellation, which runs to its
// end even when its caller leaves.
const decisionTimeout = 30 * time.Second

// DefaultClaimTTL is how long a decision may hold a proposal unless
// configured otherwise.
const DefaultClaimTTL = 10 * time.Second

// Engine turns requests into proposals and decisions into boards.
type Engine struct {
	cfg    Config
	deps   Deps
	logger *slog.Logger

	mu      sync.RWMutex
	posters map[Source]Poster
	ext     extensions // event sink and channel deciders: events.go

	out    *outbound
	leases *leases
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
	if cfg.RunDeadline <= 0 {
		cfg.RunDeadline = 23 * time.Hour
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
	if cfg.ClaimTTL <= 0 {
		cfg.ClaimTTL = DefaultClaimTTL
	}
	if cfg.PostTimeout <= 0 {
		cfg.PostTimeout = 10 * time.Second
	}
	if cfg.FlushTimeout <= 0 {
		cfg.FlushTimeout = 10 * time.Second
	}
	if cfg.ChannelNotices <= 0 {
		cfg.ChannelNotices = 5
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	return &Engine{
		cfg: cfg, deps: deps, logger: logger, posters: map[Source]Poster{},
		out: newOutbound(cfg.PostTimeout, cfg.FlushTimeout, logger), leases: newLeases(),
	}, nil
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

// NewRequestID returns a fresh request id, for adapters that show a
// request before submitting it.
func NewRequestID() RequestID { return board.NewRequestID() }

// unavailable marks an infrastructure error as ErrUnavailable unless it
// already says what it is.
func unavailable(op string, err error) error {
	if errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}

// Submit queues a request and returns at once, after one Redis round
// trip and nothing else: no Postgres, no platform call. A request whose
// DedupeKey was seen returns the first request's id. Too many requests from
// a user or channel give ErrRateLimited; the person is told "slow down"
// off the caller's path, once per window, and only a few people per
// channel window.
func (e *Engine) Submit(ctx context.Context, r Request) (id RequestID, err error) {
	defer func() { e.observeSubmit(r, id, err) }()
	r.Text = strings.TrimSpace(r.Text)
	if r.Text == "" && r.Revises == "" && r.Again == "" {
		return "", errors.New("empty request")
	}
	if r.ID == "" {
		r.ID = NewRequestID()
	}
	if r.ReceivedAt.IsZero() {
		r.ReceivedAt = e.deps.Now()
	}
	if r.Via == "" {
		r.Via = Via(ctx)
	}
	a := Admission{
		Record: RequestRecord{Request: r, Status: RequestStatus{ID: r.ID, State: RequestQueued}},
		// As long as the request's record: a webhook redelivered within a
		// week answers the first request's id on the ack path.
		DedupeTTL: 7 * 24 * time.Hour,
		UserKey:   "user:" + string(r.Thread.Channel.Source) + ":" + r.User, UserLimit: e.cfg.UserRate,
		ChannelKey: "channel:" + r.Thread.Channel.Key(), ChannelLimit: e.cfg.ChannelRate,
		ChannelNotices: e.cfg.ChannelNotices, Now: e.deps.Now(),
	}
	if r.DedupeKey != "" {
		a.DedupeKey = r.Thread.Channel.Key() + ":" + r.DedupeKey
	}
	res, err := e.deps.Requests.Admit(ctx, a)
	if err != nil {
		return "", unavailable("submit", err)
	}
	switch res.Outcome {
	case AdmitDuplicate:
		return res.RequestID, nil
	case AdmitThrottled:
		limit, who := e.cfg.UserRate, "you"
		if res.Limit == "channel" {
			limit, who = e.cfg.ChannelRate, "this channel"
		}
		text := fmt.Sprintf("Slow down: %s sent more than %d requests in %s. Try again in a moment.", who, limit.N, limit.Per)
		if res.Notify {
			e.notify(r.Thread, r.User, r.ID, Reply{Kind: ReplySlowDown, Text: text})
		}
		return "", fmt.Errorf("%w: %s", ErrRateLimited, text)
	}
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
		p = e.committed(ctx, p)
		if p.State == ProposalPending && !e.deps.Now().Before(p.ExpiresAt) {
			p.State = ProposalExpired
		}
		return e.withApprovals(ctx, p), nil
	}
	if !errors.Is(err, ErrNotFound) {
		return Proposal{}, err
	}
	return e.proposalFromHistory(ctx, id)
}

// committed lays what Postgres committed over a proposal Redis still has
// as pending while a decision holds it: an approval answers its caller
// before Redis has its decision (recordDecision), and a read in between
// must already see the approval. Postgres failing leaves the Redis view.
func (e *Engine) committed(ctx context.Context, p Proposal) Proposal {
	if !p.Deciding {
		return p
	}
	rec, err := e.deps.Boards.Proposal(ctx, p.ID)
	if err != nil || rec.State == string(ProposalPending) {
		return p
	}
	p.State, p.DecidedBy, p.DecidedAt, p.BoardID = ProposalState(rec.State), rec.DecidedBy, rec.DecidedAt, rec.BoardID
	if rec.BoardID != "" {
		p.BoardURL = board.BoardURL(e.cfg.PublicURL, rec.BoardID)
	}
	p.Deciding = false
	return p
}

// recordDecision writes an approval's decision to Redis off the approver's
// path, retrying a few times: until it lands, readers see the decision
// through committed, and the claim it holds keeps every other decision
// out.
func (e *Engine) recordDecision(p Proposal) {
	e.out.detach(func() {
		var err error
		for attempt := range 3 {
			if attempt > 0 {
				time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = e.deps.Proposals.PutDecision(ctx, p)
			cancel()
			if err == nil {
				return
			}
		}
		// The board exists and Postgres says approved; reads fall back to
		// Postgres while the claim lasts, and the next decision attempt
		// finds the approval there.
		e.logger.Warn("record approval in redis", "proposal", p.ID, "err", err)
	})
}

// proposalFromHistory rebuilds a proposal from its Postgres record. A
// record still "pending" whose Redis copy is gone has expired: Redis losing
// a proposal never leaves it approvable.
func (e *Engine) proposalFromHistory(ctx context.Context, id ProposalID) (Proposal, error) {
	rec, err := e.deps.Boards.Proposal(ctx, id)
	if errors.Is(err, board.ErrNotFound) {
		return Proposal{}, fmt.Errorf("proposal %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Proposal{}, unavailable("read proposal", err)
	}
	p := Proposal{
		ID: id, Version: rec.Version, Supersedes: rec.Supersedes, RequestedBy: rec.RequestedBy,
		State: ProposalState(rec.State), CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt, DecidedBy: rec.DecidedBy,
		DecidedAt: rec.DecidedAt, BoardID: rec.BoardID,
	}
	if ch, cid, ok := strings.Cut(rec.Channel, ":"); ok {
		p.Thread.Channel = Channel{Source: Source(ch), ID: cid}
	}
	_ = json.Unmarshal(rec.Plan, &p.Plan)
	if len(rec.Policy) > 0 && json.Unmarshal(rec.Policy, &p.Quorum) == nil {
		p = e.withApprovals(ctx, p)
	}
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
	return e.cfg.AnyMemberMayDecide || user == p.RequestedBy || slices.Contains(e.cfg.Admins, user) || e.ext.decides(p.Thread.Channel.Key(), user)
}

// decidable checks that p is pending and that user may decide it now.
// ErrExpired, *DecidedError or ErrForbidden otherwise; a refusal is
// audited.
func (e *Engine) decidable(ctx context.Context, p Proposal, user, action string) error {
	switch {
	case p.State == ProposalPending && !e.deps.Now().Before(p.ExpiresAt):
		return fmt.Errorf("proposal %s: %w", p.ID, ErrExpired)
	case p.State == ProposalPending:
	case p.State == ProposalExpired:
		return fmt.Errorf("proposal %s: %w", p.ID, ErrExpired)
	default:
		return &DecidedError{State: p.State, By: p.DecidedBy, BoardID: p.BoardID}
	}
	if err := e.mayAct(ctx, p, user, action); err != nil {
		e.audit(ctx, board.AuditEvent{Actor: user, Action: "denied", Channel: p.Thread.Channel.Key(), ProposalID: p.ID},
			map[string]any{"attempted": action, "version": p.Version, "reason": err.Error()})
		return err
	}
	return nil
}

// pendingForDecision loads a proposal and checks that user may decide it
// now. ErrNotFound, ErrExpired, *DecidedError or ErrForbidden otherwise.
func (e *Engine) pendingForDecision(ctx context.Context, id ProposalID, user, action string) (Proposal, error) {
	p, err := e.Proposal(ctx, id)
	if err != nil {
		return Proposal{}, err
	}
	return p, e.decidable(ctx, p, user, action)
}

// Authorize reports whether user may decide the pending proposal id, and
// returns it. Slack asks before it opens the Revise dialog.
func (e *Engine) Authorize(ctx context.Context, id ProposalID, user string) (Proposal, error) {
	return e.pendingForDecision(ctx, id, user, "decide")
}

// Approve executes a pending proposal's plan, once: one Redis round trip
// claims and loads the proposal, one Postgres transaction writes the board
// with the decision and its audit, and the answer goes back; Redis learns
// the decision just after (recordDecision), and reads in between see it
// from Postgres (committed). The first approver wins; every later
// approve or cancel gets a *DecidedError naming the state and board, and
// so does approving a version of a request another version of which was
// approved, or approving one a cancel, expiry or revision closed first
// (Postgres's compare-and-set decides, even when the claim was lost). When
// the execution fails the claim is given back, so approving again can
// succeed.
func (e *Engine) Approve(ctx context.Context, id ProposalID, user string) (Approval, error) {
	// A decision once started is finished, whether or not its caller
	// waits (a closed browser, a server shutting down): it commits and is
	// answered, or fails and changes nothing; never half.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), decisionTimeout)
	defer cancel()
	arrived := time.Now()
	p, c, err := e.claimFor(ctx, id, user, "approve")
	if p.Quorum.Multi() && (err == nil || beingDecided(err)) {
		// Several approvals needed: policy.go records this one and
		// returns with the claim held only when it completes the quorum.
		var done *Approval
		if p, c, done, err = e.approveQuorum(ctx, p, c, user); done != nil || err != nil {
			return deref(done), err
		}
	}
	if err != nil {
		return Approval{}, err
	}
	detail, _ := json.Marshal(withVia(ctx, map[string]any{"version": p.Version, "supersedes": p.Supersedes, "chain": p.ChainID(), "quorum": p.Quorum}))
	events := e.approvalEvents(p, user) // written with the approval
	res, err := e.deps.Boards.Execute(ctx, board.Execution{
		ProposalID: id, Chain: p.ChainID(), Channel: p.Thread.Channel.Key(), Thread: p.Thread.ID, RequestedBy: p.RequestedBy,
		ApprovedBy: user, Plan: p.Plan,
		Audit:  []board.AuditEvent{{Actor: user, Action: "approved", Channel: p.Thread.Channel.Key(), ProposalID: id, Detail: detail}},
		Events: events,
	})
	if err != nil {
		e.release(ctx, c)
		var other *board.OtherVersionApprovedError
		switch {
		case errors.Is(err, board.ErrNoTargetBoard):
			return Approval{}, fmt.Errorf("approve %s: this channel has no board to add the cards to any more: %w", id, err)
		case errors.As(err, &other):
			return Approval{}, &DecidedError{State: "closed", Other: other.ProposalID}
		case errors.Is(err, board.ErrProposalClosed):
			// Closed first (a cancel, an expiry or a revision won the
			// compare-and-set): name how.
			return Approval{}, e.lostTo(ctx, p)
		}
		return Approval{}, unavailable("approve "+string(id), err)
	}
	// The claim is left to run out: Postgres now refuses every other
	// decision, and Redis learns of this one below.
	c.end()
	e.observe().Committed(time.Since(arrived))
	e.observe().ProposalClosed(ProposalApproved)
	e.logger.Debug("proposal approved", "proposal", id, "board", res.BoardID, "replayed", res.Replayed)
	now := e.deps.Now()
	p.State, p.DecidedBy, p.DecidedAt = ProposalApproved, user, now
	p.BoardID, p.BoardURL = res.BoardID, board.BoardURL(e.cfg.PublicURL, res.BoardID)
	e.recordDecision(p)
	e.emitApproval(ctx, p, events != nil, res.Replayed)
	text := approvalText(user, now, p, res)
	e.say(p.Thread, "announce approval", func(ctx context.Context, poster Poster) error {
		return errors.Join(e.updatePreview(ctx, poster, p), poster.Reply(ctx, p.Thread, Reply{Kind: ReplyInfo, Text: text, BoardURL: p.BoardURL}))
	}, "proposal", id, "board", res.BoardID)
	return Approval{ProposalID: id, BoardID: res.BoardID, BoardURL: p.BoardURL}, nil
}

// Cancel closes a pending proposal without writing anything, giving no
// reason (CancelWithReason).
func (e *Engine) Cancel(ctx context.Context, id ProposalID, user string) (Proposal, error) {
	return e.CancelWithReason(ctx, id, user, "")
}

// finish records a closed proposal everywhere; the caller holds its claim
// c, which stays taken so nothing else decides it. What decides is
// Postgres's compare-and-set under the chain's lock (SetProposalState): a
// proposal approved or closed meanwhile, even by a decision whose claim
// ran out, is answered with a *DecidedError naming its state, and nothing
// is recorded or announced.
func (e *Engine) finish(ctx context.Context, c *claim, p Proposal, state ProposalState, user, action string) (Proposal, error) {
	rec := e.record(p)
	closed := p
	closed.State, closed.DecidedBy, closed.DecidedAt = state, user, e.deps.Now()
	rec.Events = e.encodeEvents(closed)
	if err := e.deps.Boards.SetProposalState(ctx, rec, string(state), user); err != nil {
		e.release(ctx, c)
		if errors.Is(err, board.ErrProposalClosed) {
			return p, e.lostTo(ctx, p)
		}
		return p, unavailable(action+" "+string(p.ID), err)
	}
	p.State, p.DecidedBy, p.DecidedAt = state, user, e.deps.Now()
	e.observe().ProposalClosed(state)
	e.logger.Debug("proposal "+action, "proposal", p.ID)
	if err := e.deps.Proposals.PutDecision(ctx, p); err != nil {
		e.logger.Warn("record "+action+" in redis", "proposal", p.ID, "err", err)
	}
	c.end()
	e.audit(ctx, board.AuditEvent{Actor: user, Action: action, Channel: p.Thread.Channel.Key(), ProposalID: p.ID},
		withReason(map[string]any{"version": p.Version, "supersedes": p.Supersedes}, p))
	if rec.Events != nil {
		e.wakeEvents() // written with the state
	} else {
		e.emit(ctx, p, false)
	}
	e.say(p.Thread, "update preview", func(ctx context.Context, poster Poster) error {
		return errors.Join(e.updatePreview(ctx, poster, p), e.announceReason(ctx, poster, p))
	}, "proposal", p.ID)
	return p, nil
}

// lostTo answers a close that lost Postgres's compare-and-set with how p
// was decided, and gives Redis that decision when it still had p pending:
// the winner's own write to Redis may never have landed (a crash just
// after its commit), and Redis must not offer p's buttons again.
func (e *Engine) lostTo(ctx context.Context, p Proposal) error {
	rec, err := e.deps.Boards.Proposal(ctx, p.ID)
	if err != nil || rec.State == string(ProposalPending) {
		return &DecidedError{State: "being decided"}
	}
	if p.State == ProposalPending {
		won := p
		won.State, won.DecidedBy, won.DecidedAt, won.BoardID = ProposalState(rec.State), rec.DecidedBy, rec.DecidedAt, rec.BoardID
		if rec.BoardID != "" {
			won.BoardURL = board.BoardURL(e.cfg.PublicURL, rec.BoardID)
		}
		if err := e.deps.Proposals.PutDecision(ctx, won); err != nil {
			e.logger.Warn("record decision in redis", "proposal", p.ID, "err", err)
		}
	}
	return &DecidedError{State: ProposalState(rec.State), By: rec.DecidedBy, BoardID: rec.BoardID}
}

// record is p as Postgres records it: what SetProposalState names the
// proposal and its chain by, and writes, closed, when Postgres has no
// record of it.
func (e *Engine) record(p Proposal) board.ProposalRecord {
	plan, _ := json.Marshal(p.Plan)
	return board.ProposalRecord{
		ID: p.ID, Chain: p.ChainID(), Channel: p.Thread.Channel.Key(), Version: p.Version, Supersedes: p.Supersedes,
		RequestedBy: p.RequestedBy, Plan: plan, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt,
	}
}

// Revise queues a re-plan of a pending proposal with the user's feedback;
// the new proposal supersedes it. Two revisions at once make one new
// version, and approving the proposal meanwhile drops the revision.
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
	if err := e.mayAct(ctx, p, user, "propose again"); err != nil {
		return "", err
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

// auditTimeout bounds one audit write.
const auditTimeout = 5 * time.Second

// audit records an event with detail; a failure is logged, not returned,
// because the decision it records has already happened.
func (e *Engine) audit(ctx context.Context, ev board.AuditEvent, detail map[string]any) {
	if detail = withVia(ctx, detail); detail != nil {
		ev.Detail, _ = json.Marshal(detail)
	}
	// The audit outlives a caller that went away, but not a Postgres that
	// hangs.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	if err := e.deps.Boards.RecordAudit(ctx, ev); err != nil {
		attrs := []any{"action", ev.Action, "err", err}
		if id, ok := detail["request_id"].(RequestID); ok {
			attrs = append(attrs, "request", id)
		}
		if ev.ProposalID != "" {
			attrs = append(attrs, "proposal", ev.ProposalID)
		}
		if ev.BoardID != "" {
			attrs = append(attrs, "board", ev.BoardID)
		}
		e.logger.Warn("record audit event", attrs...)
	}
}
