package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// What a failover of Postgres costs BobNet is bounded by these: a host
// that does not answer is given up after connectTimeout (the next host of
// a multi-host DATABASE_URL is tried then), an idle connection is pinged
// before it is handed out and dropped when it does not answer within
// pingTimeout, and a connection whose peer vanished without closing it is
// found dead by TCP keepalives within about keepAliveIdle +
// keepAliveCount × keepAliveInterval.
const (
	connectTimeout    = 5 * time.Second
	pingTimeout       = 2 * time.Second
	keepAliveIdle     = 5 * time.Second
	keepAliveInterval = 2 * time.Second
	keepAliveCount    = 3
)

// failoverWait bounds how long a decision cut by a lost connection waits
// for a writable Postgres (a standby being promoted) before its one retry;
// the caller's context may end it sooner.
const failoverWait = 20 * time.Second

// poolConfig parses databaseURL and sets what lets the pool ride out a
// failover: one URL may name several hosts (host1:port1,host2:port2) with
// target_session_attrs=read-write, so new connections go to whichever is
// the primary; a connect_timeout or pool_ping_timeout in the URL is kept.
func poolConfig(databaseURL string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	dialer := &net.Dialer{
		Timeout: cfg.ConnConfig.ConnectTimeout,
		KeepAliveConfig: net.KeepAliveConfig{
			Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount,
		},
	}
	cfg.ConnConfig.DialFunc = dialer.DialContext
	if cfg.PingTimeout == 0 {
		cfg.PingTimeout = pingTimeout
	}
	return cfg, nil
}

// Execute runs an approval's transaction (executeOnce), and once more
// when the first attempt lost its connection before Postgres answered its
// commit (a failover cut it): whether it committed is unknown. The retry
// waits for a writable Postgres (at most failoverWait), then runs the same
// execution, which is idempotent by proposal id: if the first attempt's
// commit landed after all, the retry finds its result and returns it
// (Replayed), so the decision still makes one board. An execution that
// got no connection at all began nothing and is not retried (the decision
// is refused at once, as in any outage); any other error, or a second
// loss, is returned as it is.
func (s *Store) Execute(ctx context.Context, ex board.Execution) (board.ExecResult, error) {
	res, err := s.executeOnce(ctx, ex)
	var lost *lostConnError
	if err == nil || !errors.As(err, &lost) || ctx.Err() != nil {
		return res, err
	}
	s.logger.Warn("an approval's transaction lost its connection to Postgres; retrying it once on a new one",
		"proposal", ex.ProposalID, "err", err)
	if werr := s.awaitWritable(ctx); werr != nil {
		return board.ExecResult{}, fmt.Errorf("execute proposal %s: %w (and %w)", ex.ProposalID, err, werr)
	}
	return s.executeOnce(ctx, ex)
}

// lostConnError marks an execution that failed because its connection
// was lost (or none could be made), not because of what it wrote.
type lostConnError struct{ err error }

func (e *lostConnError) Error() string { return e.err.Error() }
func (e *lostConnError) Unwrap() error { return e.err }

// connectionLost reports whether err, returned on conn (nil when none
// was acquired), means the connection is gone rather than the statement
// refused: the connection was closed under it, the server is shutting
// down or not yet accepting connections, the session is read-only (a
// server that became a standby), or the network failed.
func connectionLost(conn *pgx.Conn, err error) bool {
	if err == nil {
		return false
	}
	if conn != nil && conn.IsClosed() {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08": // connection exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // admin/crash shutdown, cannot connect now
			return true
		case pgErr.Code == "25006": // read-only transaction
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return pgconn.SafeToRetry(err) || errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// awaitWritable waits until the pool hands out a connection that answers,
// which with target_session_attrs=read-write is one to the primary: at
// once when Postgres is up, after the promotion during a failover. It
// gives up after failoverWait or when ctx ends. The pool's connections
// are dropped first: they went to the server that cut the decision, and
// one not yet cut by a server still shutting down answers a ping, then
// fails the retry.
func (s *Store) awaitWritable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, failoverWait)
	defer cancel()
	s.pool.Reset()
	wait := 100 * time.Millisecond
	for {
		err := s.pingWritable(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no writable Postgres within %s: %w", failoverWait, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// pingWritable acquires a connection and checks that it answers and takes
// writes; a connection that does not is closed, so the pool drops it.
func (s *Store) pingWritable(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var readOnly string
	if err := conn.QueryRow(ctx, "SHOW transaction_read_only").Scan(&readOnly); err != nil {
		_ = conn.Conn().Close(ctx)
		return err
	}
	if readOnly != "off" {
		_ = conn.Conn().Close(ctx)
		return errors.New("the server is read-only (a standby)")
	}
	return nil
}
