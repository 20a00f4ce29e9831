package store

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// A multi-host URL connects to whichever host takes writes, and the pool
// gets the short timeouts that bound a failover unless the URL sets its
// own; a URL that does not parse is an error.
func TestPoolConfigForFailover(t *testing.T) {
	cfg, err := poolConfig("postgres://bobnet@10.0.0.1:5432,10.0.0.2:5433/bobnet?sslmode=disable&target_session_attrs=read-write")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConnConfig.Host != "10.0.0.1" || len(cfg.ConnConfig.Fallbacks) != 1 || cfg.ConnConfig.Fallbacks[0].Port != 5433 {
		t.Errorf("hosts = %s %+v", cfg.ConnConfig.Host, cfg.ConnConfig.Fallbacks)
	}
	if cfg.ConnConfig.ValidateConnect == nil {
		t.Error("target_session_attrs=read-write sets no check of the server")
	}
	if cfg.ConnConfig.ConnectTimeout != connectTimeout || cfg.PingTimeout != pingTimeout || cfg.ConnConfig.DialFunc == nil {
		t.Errorf("connect timeout %s, ping timeout %s", cfg.ConnConfig.ConnectTimeout, cfg.PingTimeout)
	}
	own, err := poolConfig("postgres://bobnet@h/bobnet?connect_timeout=9&pool_ping_timeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	if own.ConnConfig.ConnectTimeout != 9*time.Second || own.PingTimeout != time.Second {
		t.Errorf("the URL's own timeouts: connect %s, ping %s", own.ConnConfig.ConnectTimeout, own.PingTimeout)
	}
	if _, err := poolConfig("postgres://bobnet@h/bobnet?connect_timeout=soon"); err == nil {
		t.Error("a connect_timeout that is no number was accepted")
	}
}

// Only a lost connection is retried, never a refusal of what was written.
func TestConnectionLost(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{io.ErrUnexpectedEOF, true},
		{fmt.Errorf("batch: %w", io.EOF), true},
		{&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "25006"}, true},
		{&pgconn.PgError{Code: "23505"}, false},
		{&pgconn.PgError{Code: sqlstateNotPending}, false},
		{errors.New("injected"), false},
		{nil, false},
	} {
		if got := connectionLost(nil, c.err); got != c.want {
			t.Errorf("connectionLost(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
