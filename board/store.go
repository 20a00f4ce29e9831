package board

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/bobnet/bobnet/plan"
	"github.com/jackc/pgx/v5/pgxpool"
)

// More errors the store returns; check with errors.Is.
var (
	// ErrProposalClosed means the proposal was cancelled, expired or
	// superseded, so it must not be executed.
	ErrProposalClosed = errors.New("proposal is no longer pending")
	// ErrInvalidPlan means the plan cannot be executed as given (not a
	// propose_actions plan, or an action the store does not know).
	ErrInvalidPlan = errors.New("plan cannot be executed")
)

// OtherVersionApprovedError says another version of the same request was
// approved already, so this one must not be executed. It matches
// ErrProposalClosed.
type OtherVersionApprovedError struct {
	ProposalID ProposalID // the approved version
}

func (e *OtherVersionApprovedError) Error() string {
	return "another version of this plan was approved: " + string(e.ProposalID)
}

// Is makes errors.Is(err, ErrProposalClosed) true.
func (e *OtherVersionApprovedError) Is(target error) bool { return target == ErrProposalClosed }

// Card statuses a card may have on a board; planned cards start in the
// first two.
var Statuses = plan.CardStatuses

// Store is the Postgres side of BobNet. Its methods are safe for concurrent
// use.
type Store struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	// failBeforeCommit, when set by a test in this package, fails an
	// execution after all its rows are written but before commit.
	failBeforeCommit func() error
}

// Open connects to databaseURL and checks the connection.
func Open(ctx context.Context, databaseURL string, logger *slog.Logger) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	return New(pool, logger), nil
}

// New returns a store on an existing pool.
func New(pool *pgxpool.Pool, logger *slog.Logger) *Store {
	return &Store{pool: pool, logger: logger}
}

// Pool returns the store's connection pool, for migrations.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Ping reports whether Postgres answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// NewBoardID returns a fresh random board id.
func NewBoardID() ID { return ID(newID("b_")) }

// NewCardID returns a fresh random card id.
func NewCardID() CardID { return CardID(newID("c_")) }
