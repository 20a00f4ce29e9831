package matrix

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/bot"
)

// ErrNotFound is returned by the store when a row it looks for is absent.
var ErrNotFound = errors.New("not found")

// Store keeps the adapter's state in Postgres (tables of migrations 0006
// and 0012): the session (device, token, sync position), the previews it
// posted, the threads it speaks in and the sealed cross-signing keys. It
// is also mautrix's sync store.
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a store on a migrated database.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Session is the bot's login as it was last saved.
type Session struct {
	DeviceID    id.DeviceID
	AccessToken string
}

const selectSession = `SELECT device_id, access_token FROM matrix_sessions WHERE user_id = $1`

// Session returns the saved login of user; ErrNotFound when none was saved
// or it holds no token.
func (s *Store) Session(ctx context.Context, user id.UserID) (Session, error) {
	var out Session
	err := s.pool.QueryRow(ctx, selectSession, user).Scan(&out.DeviceID, &out.AccessToken)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && out.AccessToken == "") {
		return Session{}, fmt.Errorf("matrix session %s: %w", user, ErrNotFound)
	}
	if err != nil {
		return Session{}, fmt.Errorf("load matrix session: %w", err)
	}
	return out, nil
}

const upsertSession = `INSERT INTO matrix_sessions (user_id, device_id, access_token) VALUES ($1, $2, $3)
ON CONFLICT (user_id) DO UPDATE SET device_id = $2, access_token = $3, updated_at = now()`

// SaveSession records the login of user. A new device starts with no sync
// position of its own, but the saved one stays: it belongs to the account.
func (s *Store) SaveSession(ctx context.Context, user id.UserID, sess Session) error {
	if _, err := s.pool.Exec(ctx, upsertSession, user, sess.DeviceID, sess.AccessToken); err != nil {
		return fmt.Errorf("save matrix session: %w", err)
	}
	return nil
}

const upsertFilter = `INSERT INTO matrix_sessions (user_id, filter_id) VALUES ($1, $2)
ON CONFLICT (user_id) DO UPDATE SET filter_id = $2, updated_at = now()`

// SaveFilterID records the sync filter's id (mautrix.SyncStore).
func (s *Store) SaveFilterID(ctx context.Context, user id.UserID, filterID string) error {
	if _, err := s.pool.Exec(ctx, upsertFilter, user, filterID); err != nil {
		return fmt.Errorf("save matrix filter: %w", err)
	}
	return nil
}

// LoadFilterID returns the saved filter id, empty when none (mautrix.SyncStore).
func (s *Store) LoadFilterID(ctx context.Context, user id.UserID) (string, error) {
	return s.column(ctx, "filter_id", user)
}

const upsertNextBatch = `INSERT INTO matrix_sessions (user_id, next_batch) VALUES ($1, $2)
ON CONFLICT (user_id) DO UPDATE SET next_batch = $2, updated_at = now()`

// SaveNextBatch records how far the sync has been processed (mautrix.SyncStore).
func (s *Store) SaveNextBatch(ctx context.Context, user id.UserID, token string) error {
	if _, err := s.pool.Exec(ctx, upsertNextBatch, user, token); err != nil {
		return fmt.Errorf("save matrix sync position: %w", err)
	}
	return nil
}

// LoadNextBatch returns the saved sync position, empty before the very
// first sync (mautrix.SyncStore).
func (s *Store) LoadNextBatch(ctx context.Context, user id.UserID) (string, error) {
	return s.column(ctx, "next_batch", user)
}

func (s *Store) column(ctx context.Context, col string, user id.UserID) (string, error) {
	var v string
	// col is one of two constants above, never user input.
	err := s.pool.QueryRow(ctx, "SELECT "+col+" FROM matrix_sessions WHERE user_id = $1", user).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("load matrix %s: %w", col, err)
	}
	return v, nil
}

const insertPreview = `INSERT INTO matrix_previews (room_id, event_id, thread_id, proposal_id) VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING`

// SavePreview records that event in room is the preview of proposal, in
// thread.
func (s *Store) SavePreview(ctx context.Context, room id.RoomID, evt id.EventID, thread id.EventID, proposal bot.ProposalID) error {
	if _, err := s.pool.Exec(ctx, insertPreview, room, evt, thread, proposal); err != nil {
		return fmt.Errorf("save matrix preview: %w", err)
	}
	return nil
}

const selectPreview = `SELECT proposal_id FROM matrix_previews WHERE room_id = $1 AND event_id = $2`

// PreviewProposal returns the proposal whose preview is event; ErrNotFound
// when event is no preview.
func (s *Store) PreviewProposal(ctx context.Context, room id.RoomID, evt id.EventID) (bot.ProposalID, error) {
	var p bot.ProposalID
	err := s.pool.QueryRow(ctx, selectPreview, room, evt).Scan(&p)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("preview %s: %w", evt, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("load matrix preview: %w", err)
	}
	return p, nil
}

const selectThreadProposal = `SELECT proposal_id FROM matrix_previews WHERE room_id = $1 AND thread_id = $2
ORDER BY created_at DESC LIMIT 1`

// ThreadProposal returns the newest proposal previewed in thread;
// ErrNotFound when the thread has none.
func (s *Store) ThreadProposal(ctx context.Context, room id.RoomID, thread id.EventID) (bot.ProposalID, error) {
	var p bot.ProposalID
	err := s.pool.QueryRow(ctx, selectThreadProposal, room, thread).Scan(&p)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("thread %s: %w", thread, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("load matrix thread proposal: %w", err)
	}
	return p, nil
}

const insertThread = `INSERT INTO matrix_threads (room_id, thread_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`

// SaveThread records a thread BobNet posted in.
func (s *Store) SaveThread(ctx context.Context, room id.RoomID, thread id.EventID) error {
	if _, err := s.pool.Exec(ctx, insertThread, room, thread); err != nil {
		return fmt.Errorf("save matrix thread: %w", err)
	}
	return nil
}

const selectThread = `SELECT EXISTS (SELECT 1 FROM matrix_threads WHERE room_id = $1 AND thread_id = $2)`

// IsThread reports whether BobNet posted in thread.
func (s *Store) IsThread(ctx context.Context, room id.RoomID, thread id.EventID) (bool, error) {
	var ok bool
	if err := s.pool.QueryRow(ctx, selectThread, room, thread).Scan(&ok); err != nil {
		return false, fmt.Errorf("load matrix thread: %w", err)
	}
	return ok, nil
}

const selectPreviewThread = `SELECT thread_id FROM matrix_previews WHERE room_id = $1 AND proposal_id = $2 LIMIT 1`

// PreviewThread returns the thread of proposal's preview; ErrNotFound
// when it has none in room.
func (s *Store) PreviewThread(ctx context.Context, room id.RoomID, proposal bot.ProposalID) (id.EventID, error) {
	var t id.EventID
	err := s.pool.QueryRow(ctx, selectPreviewThread, room, proposal).Scan(&t)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("preview of %s: %w", proposal, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("load matrix preview thread: %w", err)
	}
	return t, nil
}

// CrossSigning is the bot's cross-signing identity as saved: the public
// master key and the sealed private seeds.
type CrossSigning struct {
	MasterKey id.Ed25519
	Sealed    []byte
}

const insertCrossSigning = `INSERT INTO matrix_cross_signing (user_id, master_key, sealed) VALUES ($1, $2, $3)
ON CONFLICT (user_id) DO NOTHING`

// AddCrossSigning saves user's cross-signing identity unless one is saved
// already: replicas starting together each make one, the first saved is
// kept, and every replica goes on with what CrossSigning returns after.
func (s *Store) AddCrossSigning(ctx context.Context, user id.UserID, cs CrossSigning) error {
	if _, err := s.pool.Exec(ctx, insertCrossSigning, user, cs.MasterKey, cs.Sealed); err != nil {
		return fmt.Errorf("save matrix cross-signing keys: %w", err)
	}
	return nil
}

const selectCrossSigning = `SELECT master_key, sealed FROM matrix_cross_signing WHERE user_id = $1`

// CrossSigning returns user's saved cross-signing identity; ErrNotFound
// before the first one is saved.
func (s *Store) CrossSigning(ctx context.Context, user id.UserID) (CrossSigning, error) {
	var out CrossSigning
	err := s.pool.QueryRow(ctx, selectCrossSigning, user).Scan(&out.MasterKey, &out.Sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return CrossSigning{}, fmt.Errorf("matrix cross-signing keys of %s: %w", user, ErrNotFound)
	}
	if err != nil {
		return CrossSigning{}, fmt.Errorf("load matrix cross-signing keys: %w", err)
	}
	return out, nil
}
