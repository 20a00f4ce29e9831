//go:build goolm

package matrix

import (
	"context"
	"database/sql"
	"fmt"

	// The database/sql driver mautrix's crypto store talks to Postgres
	// through.
	_ "github.com/jackc/pgx/v5/stdlib"
	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix/event"
)

// cryptoCloser is the encryption machinery's shutdown.
type cryptoCloser interface{ Close() error }

// initCrypto turns on end-to-end encryption (pure-Go Olm, the goolm
// build tag) with mautrix's Postgres stores: Olm account, sessions and
// room state live in BobNet's database in tables of their own (crypto_*,
// mx_*), sealed with the pickle key (olm.go). Incoming encrypted events
// are decrypted and handed to the same handlers as plain ones, and what
// BobNet sends in encrypted rooms is encrypted, the room key shared with
// the members' devices. The device is then cross-signed (crosssign.go).
func (a *Adapter) initCrypto(ctx context.Context, enc Encryption) error {
	if enc.PickleKey == "" {
		return fmt.Errorf("%w: MATRIX_PICKLE_KEY is required for encryption", ErrConfig)
	}
	db, err := sql.Open("pgx", enc.DatabaseURL)
	if err != nil {
		return fmt.Errorf("matrix crypto store: %w", err)
	}
	db.SetMaxOpenConns(5)
	store, err := dbutil.NewWithDB(db, "pgx")
	if err != nil {
		_ = db.Close()
		return fmt.Errorf("matrix crypto store: %w", err)
	}
	o := newOlm(a.cli, store, string(a.cfg.UserID), []byte(enc.PickleKey), a.undecryptable)
	ictx, cancel := context.WithTimeout(ctx, 2*a.cfg.CallTimeout)
	defer cancel()
	if err := o.Init(ictx); err != nil {
		_ = db.Close()
		return err
	}
	a.cli.Crypto = o
	a.crypto = o
	if err := a.crossSign(ctx, o.Machine(), enc.PickleKey); err != nil {
		// Encryption works without it; people's clients show the device
		// as not verified by its owner.
		a.logger.Warn("matrix: the bot's device is not cross-signed; Element marks its messages as from an unverified device", "err", err)
	}
	return nil
}

// undecryptable is called when a message could not be decrypted, even
// after waiting for its keys: say so in the room, once, instead of going
// silent.
func (a *Adapter) undecryptable(evt *event.Event, err error) {
	a.logger.Warn("matrix: cannot decrypt", "room", evt.RoomID, "event", evt.ID, "sender", evt.Sender, "err", err)
	a.cannotRead(evt, "I couldn't decrypt a message here (my device has no key for it). "+
		"If it was meant for me, send it again; if this keeps happening, check that your client shares room keys with my device.")
}
