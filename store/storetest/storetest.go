// Package storetest gives integration tests a fresh, migrated Postgres
// database of their own, so they can run in parallel. Tests skip only when
// DATABASE_URL is unset; `make test` always sets it.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/migrations"
	"github.com/bobnet/bobnet/store"
)

// DatabaseURL returns DATABASE_URL, skipping the test when it is unset.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		t.Skip("DATABASE_URL is not set; `make test` starts a Postgres and sets it")
	}
	return u
}

// NewDatabase creates an empty database for this test, dropped when the
// test ends, and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	base := DatabaseURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect %s: %v", base, err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "bobnet_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// NewPool returns a pool on a fresh, migrated database.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := migrations.Apply(context.Background(), pool, Logger(t)); err != nil {
		t.Fatal(err)
	}
	return pool
}

// NewStore returns a board store on a fresh, migrated database.
func NewStore(t testing.TB) *store.Store {
	t.Helper()
	return store.New(NewPool(t), Logger(t))
}

// Logger is a logger for tests that writes nothing, so test output stays
// readable; failures are reported through t.
func Logger(testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Execute approves ex on s and returns its board with its cards by the
// plan's temp ids.
func Execute(t testing.TB, s *store.Store, ex board.Execution) (board.ID, map[string]board.Card) {
	t.Helper()
	ctx := context.Background()
	res, err := s.Execute(ctx, ex)
	if err != nil {
		t.Fatal(err)
	}
	_, cards, err := s.Board(ctx, res.BoardID)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[board.CardID]board.Card{}
	for _, c := range cards {
		byID[c.ID] = c
	}
	byTemp := map[string]board.Card{}
	for temp, id := range res.CardIDs {
		byTemp[temp] = byID[id]
	}
	return res.BoardID, byTemp
}
