package app

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/migrations"
	"github.com/bobnet/bobnet/store"
)

// stores are the connections every other part works through: Postgres
// (boards, runs, the outbox; migrated on start) and Redis (proposals,
// requests and their queue, reminders).
type stores struct {
	db      *store.Store
	rdb     redis.UniversalClient
	pending *redisstore.InFlight // proposals, requests, reminders
	queue   *redisstore.Queue    // the request stream the engine's workers read
}

// initStores connects to Postgres, migrates it, and connects to Redis.
// On an error it closes what it opened; otherwise the caller closes both
// with close, last of all (shutdown.go).
func initStores(ctx context.Context, cfg Config, logger *slog.Logger) (_ *stores, err error) {
	db, err := store.Open(ctx, cfg.DatabaseURL, logger, store.PoolAtLeast(postgresPoolSize(cfg.Workers)))
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	if _, err := migrations.Apply(ctx, db.Pool(), logger); err != nil {
		return nil, err
	}
	ropts, err := redisstore.ParseURL(cfg.RedisMode, cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	// Each worker and each stream shard's blocking reader holds a
	// connection while it waits; the pool has room for them beside the
	// rest (admissions, decisions, sweeps). A pool_size in REDIS_URL wins.
	rdb := redisstore.Connect(ropts, cfg.Workers+cfg.RedisStreams)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("REDIS_URL: cannot reach Redis (BOBNET_REDIS_MODE=%s): %w", cfg.RedisMode, err)
	}
	layout := redisstore.Layout{Prefix: cfg.RedisPrefix, Streams: cfg.RedisStreams, Mode: cfg.RedisMode}
	pending := redisstore.NewInFlightIn(rdb, layout)
	// Before anything makes a request stream: Init reads whether one
	// exists.
	if err := pending.Init(ctx); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	return &stores{db: db, rdb: rdb, pending: pending, queue: redisstore.NewQueueIn(rdb, layout)}, nil
}

// postgresPoolSize is the least the Postgres pool may open: pgx's own
// default (the larger of 4 and the cores) and one connection for every
// other worker, since each preview writes several rows right after its
// model answers (the tokens it cost, its policy read, the proposal, the
// audit row) and previews finish together. A pool_max_conns in
// DATABASE_URL wins.
func postgresPoolSize(workers int) int { return max(4, runtime.NumCPU()) + workers/2 }

// close closes Redis, then Postgres: the reverse of their opening.
func (s *stores) close() {
	_ = s.rdb.Close()
	s.db.Close()
}
