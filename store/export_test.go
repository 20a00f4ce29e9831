package store

import "github.com/jackc/pgx/v5"

// SetFailBeforeCommit lets tests make an execution fail after all its rows
// are written but before commit.
func SetFailBeforeCommit(s *Store, f func() error) { s.failBeforeCommit = f }

// SetAfterCommit lets tests run f on an execution's connection after its
// commit was answered; f's error fails the execution as a lost answer
// would.
func SetAfterCommit(s *Store, f func(*pgx.Conn) error) { s.afterCommit = f }
