// Package store keeps BobNet's boards in Postgres, one file per table
// family: boards and cards (the one-transaction execution of an approved
// plan among them), proposals, audit events, policies and approvals, model
// usage, webhook deliveries and the event outbox, API tokens, runs and
// schedules, Slack installations, the Matrix adapter's state, console
// history, and the NOTIFY feed of card changes. The types it stores are
// package board's.
package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is the Postgres side of BobNet. Its methods are safe for concurrent
// use.
type Store struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	// failBeforeCommit, when set by a test in this package, fails an
	// execution after all its rows are written but before commit.
	failBeforeCommit func() error
	// afterCommit, when set by a test in this package, runs on the
	// execution's connection after its commit was answered; its error
	// fails the execution as if the answer had been lost.
	afterCommit func(*pgx.Conn) error
}

// Option changes how Open sets up the connection pool.
type Option func(cfg *pgxpool.Config, databaseURL string)

// PoolAtLeast raises the pool's most connections to n, unless
// databaseURL sets pool_max_conns (which then wins) or pgx's own default
// (the larger of 4 and the cores) is more.
func PoolAtLeast(n int) Option {
	return func(cfg *pgxpool.Config, databaseURL string) {
		if strings.Contains(databaseURL, "pool_max_conns") || n <= int(cfg.MaxConns) {
			return
		}
		cfg.MaxConns = int32(min(n, 1<<15))
	}
}

// Open connects to databaseURL and checks the connection. The URL may name
// several hosts with target_session_attrs=read-write (a primary and its
// standbys): the pool connects to whichever is the primary, and after a
// failover to the promoted one (poolConfig).
func Open(ctx context.Context, databaseURL string, logger *slog.Logger, opts ...Option) (*Store, error) {
	cfg, err := poolConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	for _, o := range opts {
		o(cfg, databaseURL)
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
