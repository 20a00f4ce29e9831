// Package migrations holds BobNet's Postgres schema as numbered SQL files,
// embedded in the binary and applied forward only.
package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed *.sql
var files embed.FS

// lockKey is the advisory lock that lets only one process migrate at a
// time; replicas starting together wait for the first one and then find
// nothing left to do.
const lockKey = 0x626f626e6574 // "bobnet"

var fileName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

// Migration is one numbered schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// All returns the embedded migrations in order. Numbers must start at 1 and
// have no gaps, so a missing file is noticed rather than skipped.
func All() ([]Migration, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %s is not named NNNN_name.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		b, err := files.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: expected number %04d", m.Name, i+1)
		}
	}
	return out, nil
}

const createVersionTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`

// Apply brings the database up to the newest migration and returns how
// many it applied. Each migration runs in its own transaction. It refuses a
// database that is newer than this binary knows.
func Apply(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (int, error) {
	all, err := All()
	if err != nil {
		return 0, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockKey); err != nil {
		return 0, fmt.Errorf("migrate: lock: %w", err)
	}
	defer func() {
		// Unlock on a fresh context: the caller's may be done by now.
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, lockKey)
	}()
	if _, err := conn.Exec(ctx, createVersionTable); err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return 0, fmt.Errorf("migrate: read version: %w", err)
	}
	if current > len(all) {
		return 0, fmt.Errorf("migrate: the database is at version %d but this binary knows only %d; run a newer BobNet", current, len(all))
	}
	applied := 0
	for _, m := range all[current:] {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("migrate %s: %w", m.Name, err)
		}
		logger.Info("migration applied", "version", m.Version, "name", m.Name)
		applied++
	}
	return applied, nil
}
