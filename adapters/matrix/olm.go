//go:build goolm

package matrix

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/sqlstatestore"
)

// olm is the bot's end-to-end encryption as the mautrix client calls it
// (mautrix.CryptoHelper): an OlmMachine over mautrix's SQL stores in
// BobNet's Postgres. It does what mautrix's cryptohelper package does for
// a bot with a Postgres database, built here because that package imports
// the SQLite driver (through dbutil/litestream) into every binary that
// links it, whether or not SQLite is used: a few MB of idle memory.
//
// The stores are the same tables cryptohelper kept (crypto_*, mx_*), under
// the same account id, so keys made before carry on.
type olm struct {
	cli    *mautrix.Client
	db     *dbutil.Database
	states *sqlstatestore.SQLStateStore
	keys   *crypto.SQLCryptoStore
	mach   *crypto.OlmMachine
	log    zerolog.Logger
	// undecryptable is told about a message that could not be decrypted,
	// even after waiting for its keys.
	undecryptable func(*event.Event, error)
	// waiting are the decryptions waiting for their keys, which Close
	// waits for.
	waiting sync.WaitGroup
}

var _ mautrix.CryptoHelper = (*olm)(nil)

// How long a message whose room key has not arrived waits for it: a
// little at first (keys usually come in the same sync or the next), then,
// after asking the sender's devices for the key, longer.
const (
	keyWait       = 3 * time.Second
	keyWaitLonger = 22 * time.Second
)

// newOlm makes the stores for account (the bot's user id) on db, sealed
// with pickleKey; Init loads them.
func newOlm(cli *mautrix.Client, db *dbutil.Database, account string, pickleKey []byte, undecryptable func(*event.Event, error)) *olm {
	log := cli.Log.With().Str("component", "crypto").Logger()
	return &olm{
		cli: cli, db: db, log: log, undecryptable: undecryptable,
		states: sqlstatestore.NewSQLStateStore(db, dbutil.ZeroLogger(log.With().Str("db_section", "matrix_state").Logger()), false),
		keys:   crypto.NewSQLCryptoStore(db, dbutil.ZeroLogger(log.With().Str("db_section", "crypto").Logger()), account, cli.DeviceID, pickleKey),
	}
}

// Init brings the stores' tables up to date, loads the Olm account (or
// makes one), checks the device's keys on the homeserver (publishing them
// the first time), and hooks the machine into the client's sync: room
// state and members for whom to share keys with, to-device messages for
// keys, and encrypted events decrypted and handed to the same handlers as
// plain ones.
func (o *olm) Init(ctx context.Context) error {
	syncer, ok := o.cli.Syncer.(mautrix.ExtensibleSyncer)
	if !ok {
		return fmt.Errorf("matrix crypto: the client's syncer cannot take handlers")
	}
	if err := o.states.Upgrade(ctx); err != nil {
		return fmt.Errorf("matrix crypto: state store tables: %w", err)
	}
	if err := o.keys.DB.Upgrade(ctx); err != nil {
		return fmt.Errorf("matrix crypto: key store tables: %w", err)
	}
	stored, err := o.keys.FindDeviceID(ctx)
	if err != nil {
		return fmt.Errorf("matrix crypto: find the saved device: %w", err)
	}
	if stored != "" && stored != o.cli.DeviceID {
		return fmt.Errorf("matrix crypto: the keys saved are for device %s, but the bot is logged in as %s", stored, o.cli.DeviceID)
	}
	o.cli.StateStore = o.states
	o.mach = crypto.NewOlmMachine(o.cli, &o.log, o.keys, o.states)
	if err := o.mach.Load(ctx); err != nil {
		return fmt.Errorf("matrix crypto: load the Olm account: %w", err)
	}
	if err := o.checkDeviceKeys(ctx); err != nil {
		return fmt.Errorf("matrix crypto: %w", err)
	}
	syncer.OnSync(o.mach.ProcessSyncResponse)
	syncer.OnEventType(event.StateMember, o.mach.HandleMemberEvent)
	syncer.OnEventType(event.StateHistoryVisibility, o.mach.HandleHistoryVisibility)
	syncer.OnEventType(event.EventEncrypted, o.handleEncrypted)
	syncer.OnEvent(o.cli.StateStoreSyncHandler)
	return nil
}

// checkDeviceKeys publishes the device's keys the first time and
// otherwise checks that the homeserver has the ones this account holds.
func (o *olm) checkDeviceKeys(ctx context.Context) error {
	user, device := o.cli.UserID, o.cli.DeviceID
	resp, err := o.cli.QueryKeys(ctx, &mautrix.ReqQueryKeys{DeviceKeys: map[id.UserID]mautrix.DeviceIDList{user: {device}}})
	if err != nil {
		return fmt.Errorf("query the device's own keys: %w", err)
	}
	shared := o.mach.GetAccount().Shared
	published, ok := resp.DeviceKeys[user][device]
	switch {
	case !ok || len(published.Keys) == 0:
		if shared {
			return fmt.Errorf("the Olm account's keys were published once but the homeserver no longer has them")
		}
		if err := o.mach.ShareKeys(ctx, -1); err != nil {
			return fmt.Errorf("publish the device's keys: %w", err)
		}
		return nil
	case !shared:
		return fmt.Errorf("the homeserver has keys for device %s that this Olm account did not publish", device)
	case published.Keys.GetEd25519(device) != o.mach.OwnIdentity().SigningKey:
		return fmt.Errorf("the homeserver's identity key for device %s is not this Olm account's", device)
	}
	return nil
}

// Machine is the Olm machine, once Init has made it.
func (o *olm) Machine() *crypto.OlmMachine { return o.mach }

// Close waits for the decryptions waiting for keys and closes the
// database.
func (o *olm) Close() error {
	o.waiting.Wait()
	return o.db.Close()
}

// handleEncrypted decrypts an event and hands it on as if it had come in
// the clear. One whose key has not arrived waits for it in the background
// (during a sync; on the very first sync it is history and given up at
// once), asking for the key if it takes long.
func (o *olm) handleEncrypted(ctx context.Context, evt *event.Event) {
	dec, err := o.Decrypt(ctx, evt)
	switch {
	case err == nil:
		o.dispatch(ctx, dec)
	case errors.Is(err, crypto.ErrNoSessionFound) && ctx.Value(mautrix.SyncTokenContextKey) != "":
		o.waiting.Add(1)
		go func() {
			defer o.waiting.Done()
			o.waitAndDecrypt(ctx, evt)
		}()
	default:
		o.undecryptable(evt, err)
	}
}

// waitAndDecrypt waits for evt's room key, asking all the sender's devices
// (and the bot's own) for it after the first wait, then decrypts. Every
// device of the sender's is asked: the event's device id is deprecated
// (Matrix v1.3) and clients no longer send it.
func (o *olm) waitAndDecrypt(ctx context.Context, evt *event.Event) {
	c := evt.Content.AsEncrypted()
	if !o.mach.WaitForSession(ctx, evt.RoomID, c.SenderKey, c.SessionID, keyWait) {
		o.RequestSession(ctx, evt.RoomID, c.SenderKey, c.SessionID, evt.Sender, "")
		if !o.mach.WaitForSession(ctx, evt.RoomID, c.SenderKey, c.SessionID, keyWaitLonger) {
			o.undecryptable(evt, crypto.ErrNoSessionFound)
			return
		}
	}
	dec, err := o.Decrypt(ctx, evt)
	if err != nil {
		o.undecryptable(evt, err)
		return
	}
	o.dispatch(ctx, dec)
}

// dispatch hands a decrypted event to the syncer's handlers.
func (o *olm) dispatch(ctx context.Context, evt *event.Event) {
	evt.Mautrix.EventSource |= event.SourceDecrypted
	if d, ok := o.cli.Syncer.(mautrix.DispatchableSyncer); ok {
		d.Dispatch(ctx, evt)
	}
}

// Decrypt implements mautrix.CryptoHelper.
func (o *olm) Decrypt(ctx context.Context, evt *event.Event) (*event.Event, error) {
	return o.mach.DecryptMegolmEvent(ctx, evt)
}

// WaitForSession implements mautrix.CryptoHelper.
func (o *olm) WaitForSession(ctx context.Context, room id.RoomID, sender id.SenderKey, session id.SessionID, timeout time.Duration) bool {
	return o.mach.WaitForSession(ctx, room, sender, session, timeout)
}

// RequestSession asks the sender's device (every device of theirs when
// device is empty) and the bot's own other devices for a room key.
func (o *olm) RequestSession(ctx context.Context, room id.RoomID, sender id.SenderKey, session id.SessionID, user id.UserID, device id.DeviceID) {
	if device == "" {
		device = "*"
	}
	to := map[id.UserID][]id.DeviceID{user: {device}, o.cli.UserID: {"*"}}
	if err := o.mach.SendRoomKeyRequest(ctx, room, sender, session, "", to); err != nil {
		o.log.Warn().Err(err).Str("session_id", session.String()).Msg("room key request failed")
	}
}

// Encrypt encrypts content for room with the room's outbound session,
// sharing a new one with the room's members first when there is none yet
// or it has run out.
func (o *olm) Encrypt(ctx context.Context, room id.RoomID, typ event.Type, content any) (*event.EncryptedEventContent, error) {
	enc, err := o.mach.EncryptMegolmEvent(ctx, room, typ, content)
	if err == nil || !(errors.Is(err, crypto.ErrSessionExpired) || errors.Is(err, crypto.ErrNoGroupSession) || errors.Is(err, crypto.ErrSessionNotShared)) {
		return enc, err
	}
	members, err := o.states.GetRoomJoinedOrInvitedMembers(ctx, room)
	if err != nil {
		return nil, fmt.Errorf("read the room's members: %w", err)
	}
	if err := o.mach.ShareGroupSession(ctx, room, members); err != nil {
		return nil, fmt.Errorf("share the room key: %w", err)
	}
	enc, err = o.mach.EncryptMegolmEvent(ctx, room, typ, content)
	if err != nil {
		return nil, fmt.Errorf("encrypt after sharing the room key: %w", err)
	}
	return enc, nil
}
