package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
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

// BoardReader reads the boards a channel made, for planning against them
// and for status; *store.Store is one.
type BoardReader interface {
	ChannelBoard(ctx context.Context, channel string) (board.Board, error)
	BoardSummary(ctx context.Context, id board.ID) (plan.BoardSummary, error)
	Status(ctx context.Context, id board.ID) (board.Status, error)
}

// ProposalHistory keeps every proposal in Postgres, where it outlives its
// Redis copy; *store.Store is one.
type ProposalHistory interface {
	SaveProposal(ctx context.Context, p board.ProposalRecord) error
	Proposal(ctx context.Context, id board.ProposalID) (board.ProposalRecord, error)
}

// Decisions writes what a decision does to Postgres: an approval's board,
// or the closed state of a cancelled, expired or superseded proposal,
// each a compare-and-set under its chain's lock; *store.Store is one.
type Decisions interface {
	Execute(ctx context.Context, ex board.Execution) (board.ExecResult, error)
	SetProposalState(ctx context.Context, p board.ProposalRecord, state, decidedBy string) error
}

// AuditLog records what happened; *store.Store is one.
type AuditLog interface {
	RecordAudit(ctx context.Context, e board.AuditEvent) error
}

// DeliveryLog keeps the webhook deliveries requests came from for good;
// *store.Store is one.
type DeliveryLog interface {
	// RecordDelivery records a webhook delivery's first request, or
	// returns the one recorded before.
	RecordDelivery(ctx context.Context, d board.Delivery) (board.DeliveryResult, error)
}

// Proposals keeps pending proposals with their expiry and the claim that
// lets one decision win; *redisstore.InFlight is one.
type Proposals interface {
	PutProposal(ctx context.Context, p board.Proposal) error
	// PutDecision records p's decision (state, decider, time, board) and
	// takes it off the expiry schedule, without writing the plan again.
	PutDecision(ctx context.Context, p board.Proposal) error
	// SetPreviewMessage records where the preview was posted, apart from
	// the rest of the proposal (which a decision may be rewriting at the
	// same moment); Proposal and ClaimProposal return it in Message. It
	// reports whether PreviewMessage found none meanwhile.
	SetPreviewMessage(ctx context.Context, id board.ProposalID, ref board.MessageRef, expires time.Time) (missed bool, err error)
	// PreviewMessage returns where the preview was posted; "" (noted as a
	// miss for SetPreviewMessage) while it is still being posted.
	PreviewMessage(ctx context.Context, id board.ProposalID, expires time.Time) (board.MessageRef, error)
	Proposal(ctx context.Context, id board.ProposalID) (board.Proposal, error)
	Claim(ctx context.Context, id board.ProposalID, holder string, ttl time.Duration) (bool, error)
	ClaimProposal(ctx context.Context, id board.ProposalID, holder string, ttl time.Duration) (board.Proposal, bool, error)
	// Release gives holder's claim back; a claim someone else holds is
	// left (ErrNotHolder).
	Release(ctx context.Context, id board.ProposalID, holder string) error
	// RenewClaim extends holder's claim to ttl from now; ErrNotHolder when
	// holder no longer holds it.
	RenewClaim(ctx context.Context, id board.ProposalID, holder string, ttl time.Duration) error
	DueExpiries(ctx context.Context, now time.Time, limit int) ([]board.ProposalID, error)
	RemoveExpiry(ctx context.Context, id board.ProposalID) error
}

// Requests keeps request records, dedupe keys, rate limits and thread
// history; *redisstore.InFlight is one.
type Requests interface {
	Admit(ctx context.Context, a board.Admission) (board.AdmitResult, error)
	Allow(ctx context.Context, key string, limit board.RateLimit) (bool, error)
	PutRequest(ctx context.Context, r board.RequestRecord) error
	Request(ctx context.Context, id board.RequestID) (board.RequestRecord, error)
	AppendTurn(ctx context.Context, thread string, t plan.Turn) error
	Turns(ctx context.Context, thread string) ([]plan.Turn, error)
}

// Queue hands requests to workers; *redisstore.Queue is one.
type Queue interface {
	Init(ctx context.Context) error
	Read(ctx context.Context, consumer string, block time.Duration) ([]board.QueuedRequest, error)
	Reclaim(ctx context.Context, consumer string, idle time.Duration) ([]board.QueuedRequest, error)
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
	UserRate      board.RateLimit
	ChannelRate   board.RateLimit
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
	// UnavailableRetry is how long an answer's post is tried again while
	// a store of BobNet's own is unavailable, before the request is left
	// to be reclaimed (default 20s: longer than a Redis Cluster takes to
	// promote a replica; the soak saw a dead master's slots refused for
	// 4–9 s).
	UnavailableRetry time.Duration
	// FlushTimeout is how long a stopping engine keeps posting the
	// messages still queued (default 10s).
	FlushTimeout time.Duration
	// ChannelNotices is how many throttled people of one channel are told
	// "slow down" per channel window (default 5).
	ChannelNotices int
	// ChannelDeciders lets users decide the proposals of a channel (by its
	// key, e.g. "console:hook-github"), beside the requester and the
	// admins: the deciders of the hooks (webhook.Deciders).
	ChannelDeciders map[string][]string
}

// Deps are what the engine works with. In production the board store
// (*store.Store) fills every board field and the proposal store
// (*redisstore.InFlight) every proposal one; each is its own field so that what
// a stage uses is what its interface names. Fields marked optional may be
// nil, and the doc of each says what the engine does without it.
type Deps struct {
	Planner Planner
	// Boards, History, Decisions, Audit and Deliveries are required.
	Boards     BoardReader
	History    ProposalHistory
	Decisions  Decisions
	Audit      AuditLog
	Deliveries DeliveryLog
	// Cards changes cards (optional): without it every card command
	// answers ErrNoCards.
	Cards CardStore
	// Assigned lists cards by assignee for a person's home (optional):
	// without it CardsAssignedTo answers ErrNoHome.
	Assigned AssignedCards
	// Policies keeps approval policies and approvals (optional): without
	// it every channel keeps the built-in rule and one approval decides.
	Policies PolicyStore
	// Usage counts model tokens for budgets (optional): without it budgets
	// are not enforced.
	Usage UsageStore
	// Runs starts and lists the runs of boards (optional): without it this
	// BobNet does not run boards, and chat says so.
	Runs RunStore

	// Proposals, Requests and Queue are required.
	Proposals Proposals
	Requests  Requests
	Queue     Queue
	// Pending lists the pending proposals for a person's home (optional):
	// without it WaitingFor answers ErrNoHome.
	Pending PendingLister
	// Reminders schedules the reminders of pending proposals (optional):
	// without it nobody is reminded.
	Reminders ReminderSchedule

	// Events is where the engine's events go (optional): without a Sink
	// nothing is emitted. In production the outbox is both its Sink and
	// its Encoder; it needs only the board store, so it is built first.
	Events Events

	Now      func() time.Time
	Observer Observer // optional: told what happens, for metrics
}

// DefaultClaimTTL is how long a decision may hold a proposal unless
// configured otherwise.
const DefaultClaimTTL = 10 * time.Second

// Engine turns requests into proposals and decisions into boards.
type Engine struct {
	cfg    Config
	deps   Deps
	logger *slog.Logger

	mu       sync.RWMutex
	surfaces map[board.Source]Registration

	out    *outbound
	leases *leases
	shows  *runShows
	// storing bounds how many answered plans are being stored at once
	// (planning.go).
	storing chan struct{}
}

// New returns an engine. Nothing runs until Run.
func New(cfg Config, deps Deps, logger *slog.Logger) (*Engine, error) {
	if deps.Planner == nil || deps.Boards == nil || deps.History == nil || deps.Decisions == nil || deps.Audit == nil ||
		deps.Deliveries == nil || deps.Proposals == nil || deps.Requests == nil || deps.Queue == nil {
		return nil, errors.New("bot: planner, boards, history, decisions, audit, deliveries, proposals, requests and queue are all required")
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
	if cfg.UnavailableRetry <= 0 {
		cfg.UnavailableRetry = 20 * time.Second
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
	deciders := make(map[string][]string, len(cfg.ChannelDeciders))
	for ch, users := range cfg.ChannelDeciders {
		deciders[ch] = slices.Clone(users)
	}
	cfg.ChannelDeciders = deciders
	return &Engine{
		cfg: cfg, deps: deps, logger: logger, surfaces: map[board.Source]Registration{},
		out: newOutbound(cfg.PostTimeout, cfg.FlushTimeout, logger), leases: newLeases(), shows: newRunShows(),
		storing: make(chan struct{}, storingAtOnce()),
	}, nil
}

// unavailable marks an infrastructure error as ErrUnavailable unless it
// already says what it is.
func unavailable(op string, err error) error {
	if errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
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
	if err := e.deps.Audit.RecordAudit(ctx, ev); err != nil {
		attrs := []any{"action", ev.Action, "err", err}
		if id, ok := detail["request_id"].(board.RequestID); ok {
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
