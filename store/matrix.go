package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bobnet/bobnet/board"
)

// The Matrix adapter's state (tables of migrations 0006, 0012 and 0017):
// the bot's session (device, token, sync position), the previews it
// posted, the threads it speaks in, its sealed cross-signing keys and the
// notices announcing cards in review. Ids are Matrix's strings; a row that
// is not there is board.ErrNotFound. mautrix's own crypto tables are
// mautrix's, not these.

const (
	selectMatrixSession = `SELECT device_id, access_token FROM matrix_sessions WHERE user_id = $1`

	upsertMatrixSession = `INSERT INTO matrix_sessions (user_id, device_id, access_token) VALUES ($1, $2, $3)
ON CONFLICT (user_id) DO UPDATE SET device_id = $2, access_token = $3, updated_at = now()`

	upsertMatrixFilter = `INSERT INTO matrix_sessions (user_id, filter_id) VALUES ($1, $2)
ON CONFLICT (user_id) DO UPDATE SET filter_id = $2, updated_at = now()`

	selectMatrixFilter = `SELECT filter_id FROM matrix_sessions WHERE user_id = $1`

	upsertMatrixNextBatch = `INSERT INTO matrix_sessions (user_id, next_batch) VALUES ($1, $2)
ON CONFLICT (user_id) DO UPDATE SET next_batch = $2, updated_at = now()`

	selectMatrixNextBatch = `SELECT next_batch FROM matrix_sessions WHERE user_id = $1`

	insertMatrixPreview = `INSERT INTO matrix_previews (room_id, event_id, thread_id, proposal_id) VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING`

	selectMatrixPreview = `SELECT proposal_id FROM matrix_previews WHERE room_id = $1 AND event_id = $2`

	selectMatrixThreadProposal = `SELECT proposal_id FROM matrix_previews WHERE room_id = $1 AND thread_id = $2
ORDER BY created_at DESC LIMIT 1`

	insertMatrixThread = `INSERT INTO matrix_threads (room_id, thread_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`

	selectMatrixThread = `SELECT EXISTS (SELECT 1 FROM matrix_threads WHERE room_id = $1 AND thread_id = $2)`

	selectMatrixPreviewThread = `SELECT thread_id FROM matrix_previews WHERE room_id = $1 AND proposal_id = $2 LIMIT 1`

	insertMatrixCrossSigning = `INSERT INTO matrix_cross_signing (user_id, master_key, sealed) VALUES ($1, $2, $3)
ON CONFLICT (user_id) DO NOTHING`

	selectMatrixCrossSigning = `SELECT master_key, sealed FROM matrix_cross_signing WHERE user_id = $1`

	insertMatrixReview = `INSERT INTO matrix_reviews (room_id, event_id, thread_id, run_id, card_id, handle, round)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`

	selectMatrixReview = `SELECT thread_id, run_id, card_id, handle, round FROM matrix_reviews WHERE room_id = $1 AND event_id = $2`

	selectLatestMatrixReview = `SELECT event_id FROM matrix_reviews WHERE room_id = $1 AND run_id = $2 AND card_id = $3
ORDER BY created_at DESC LIMIT 1`
)

// MatrixSession returns the saved login of user; board.ErrNotFound when
// none was saved or it holds no token (a row may hold only the sync
// position).
func (s *Store) MatrixSession(ctx context.Context, user string) (board.MatrixSession, error) {
	var out board.MatrixSession
	err := s.pool.QueryRow(ctx, selectMatrixSession, user).Scan(&out.DeviceID, &out.AccessToken)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && out.AccessToken == "") {
		return board.MatrixSession{}, fmt.Errorf("matrix session %s: %w", user, board.ErrNotFound)
	}
	if err != nil {
		return board.MatrixSession{}, fmt.Errorf("load matrix session: %w", err)
	}
	return out, nil
}

// SaveMatrixSession records the login of user. A new device starts with
// no sync position of its own, but the saved one stays: it belongs to the
// account.
func (s *Store) SaveMatrixSession(ctx context.Context, user string, sess board.MatrixSession) error {
	if _, err := s.pool.Exec(ctx, upsertMatrixSession, user, sess.DeviceID, sess.AccessToken); err != nil {
		return fmt.Errorf("save matrix session: %w", err)
	}
	return nil
}

// SaveMatrixFilterID records the id of user's sync filter, so a restart
// does not make a new one.
func (s *Store) SaveMatrixFilterID(ctx context.Context, user, filterID string) error {
	if _, err := s.pool.Exec(ctx, upsertMatrixFilter, user, filterID); err != nil {
		return fmt.Errorf("save matrix filter: %w", err)
	}
	return nil
}

// MatrixFilterID returns the saved id of user's sync filter, empty when
// none.
func (s *Store) MatrixFilterID(ctx context.Context, user string) (string, error) {
	return s.matrixSessionColumn(ctx, selectMatrixFilter, "filter_id", user)
}

// SaveMatrixNextBatch records how far user's sync has been processed, so
// a restart (or another replica) goes on from there.
func (s *Store) SaveMatrixNextBatch(ctx context.Context, user, token string) error {
	if _, err := s.pool.Exec(ctx, upsertMatrixNextBatch, user, token); err != nil {
		return fmt.Errorf("save matrix sync position: %w", err)
	}
	return nil
}

// MatrixNextBatch returns user's saved sync position, empty before the
// very first sync.
func (s *Store) MatrixNextBatch(ctx context.Context, user string) (string, error) {
	return s.matrixSessionColumn(ctx, selectMatrixNextBatch, "next_batch", user)
}

// matrixSessionColumn runs query, one of the single-column selects of
// matrix_sessions above, for user: empty when user has no row.
func (s *Store) matrixSessionColumn(ctx context.Context, query, col, user string) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, query, user).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("load matrix %s: %w", col, err)
	}
	return v, nil
}

// SaveMatrixPreview records that event evt in room is the preview of
// proposal, in thread, so a reaction on it decides that proposal.
func (s *Store) SaveMatrixPreview(ctx context.Context, room, evt, thread string, proposal board.ProposalID) error {
	if _, err := s.pool.Exec(ctx, insertMatrixPreview, room, evt, thread, proposal); err != nil {
		return fmt.Errorf("save matrix preview: %w", err)
	}
	return nil
}

// MatrixPreviewProposal returns the proposal whose preview is event evt in
// room; board.ErrNotFound when evt is no preview.
func (s *Store) MatrixPreviewProposal(ctx context.Context, room, evt string) (board.ProposalID, error) {
	var p board.ProposalID
	err := s.pool.QueryRow(ctx, selectMatrixPreview, room, evt).Scan(&p)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("preview %s: %w", evt, board.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("load matrix preview: %w", err)
	}
	return p, nil
}

// MatrixThreadProposal returns the newest proposal previewed in thread of
// room, which a thread command acts on; board.ErrNotFound when the thread
// has none.
func (s *Store) MatrixThreadProposal(ctx context.Context, room, thread string) (board.ProposalID, error) {
	var p board.ProposalID
	err := s.pool.QueryRow(ctx, selectMatrixThreadProposal, room, thread).Scan(&p)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("thread %s: %w", thread, board.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("load matrix thread proposal: %w", err)
	}
	return p, nil
}

// SaveMatrixThread records a thread of room BobNet posted in, so replies
// there are BobNet's to answer.
func (s *Store) SaveMatrixThread(ctx context.Context, room, thread string) error {
	if _, err := s.pool.Exec(ctx, insertMatrixThread, room, thread); err != nil {
		return fmt.Errorf("save matrix thread: %w", err)
	}
	return nil
}

// IsMatrixThread reports whether BobNet posted in thread of room.
func (s *Store) IsMatrixThread(ctx context.Context, room, thread string) (bool, error) {
	var ok bool
	if err := s.pool.QueryRow(ctx, selectMatrixThread, room, thread).Scan(&ok); err != nil {
		return false, fmt.Errorf("load matrix thread: %w", err)
	}
	return ok, nil
}

// MatrixPreviewThread returns the thread of proposal's preview in room;
// board.ErrNotFound when it has none there.
func (s *Store) MatrixPreviewThread(ctx context.Context, room string, proposal board.ProposalID) (string, error) {
	var t string
	err := s.pool.QueryRow(ctx, selectMatrixPreviewThread, room, proposal).Scan(&t)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("preview of %s: %w", proposal, board.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("load matrix preview thread: %w", err)
	}
	return t, nil
}

// AddMatrixCrossSigning saves user's cross-signing identity unless one is
// saved already: replicas starting together each make one, the first
// saved is kept, and every replica goes on with what MatrixCrossSigning
// returns after.
func (s *Store) AddMatrixCrossSigning(ctx context.Context, user string, cs board.MatrixCrossSigning) error {
	if _, err := s.pool.Exec(ctx, insertMatrixCrossSigning, user, cs.MasterKey, cs.Sealed); err != nil {
		return fmt.Errorf("save matrix cross-signing keys: %w", err)
	}
	return nil
}

// MatrixCrossSigning returns user's saved cross-signing identity;
// board.ErrNotFound before the first one is saved.
func (s *Store) MatrixCrossSigning(ctx context.Context, user string) (board.MatrixCrossSigning, error) {
	var out board.MatrixCrossSigning
	err := s.pool.QueryRow(ctx, selectMatrixCrossSigning, user).Scan(&out.MasterKey, &out.Sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return board.MatrixCrossSigning{}, fmt.Errorf("matrix cross-signing keys of %s: %w", user, board.ErrNotFound)
	}
	if err != nil {
		return board.MatrixCrossSigning{}, fmt.Errorf("load matrix cross-signing keys: %w", err)
	}
	return out, nil
}

// SaveMatrixReview records that event evt in room announced r's card, so
// a reaction on it reviews that card. Saving it again changes nothing.
func (s *Store) SaveMatrixReview(ctx context.Context, room, evt string, r board.MatrixReview) error {
	if _, err := s.pool.Exec(ctx, insertMatrixReview, room, evt, r.Thread, r.Run, r.Card, r.Handle, r.Round); err != nil {
		return fmt.Errorf("save matrix review: %w", err)
	}
	return nil
}

// MatrixReview returns the announcement that event evt in room is;
// board.ErrNotFound when evt announced no review.
func (s *Store) MatrixReview(ctx context.Context, room, evt string) (board.MatrixReview, error) {
	var r board.MatrixReview
	err := s.pool.QueryRow(ctx, selectMatrixReview, room, evt).Scan(&r.Thread, &r.Run, &r.Card, &r.Handle, &r.Round)
	if errors.Is(err, pgx.ErrNoRows) {
		return board.MatrixReview{}, fmt.Errorf("review announcement %s: %w", evt, board.ErrNotFound)
	}
	if err != nil {
		return board.MatrixReview{}, fmt.Errorf("load matrix review: %w", err)
	}
	return r, nil
}

// LatestMatrixReview returns the event of the latest announcement of card
// of run in room, the one whose controls still decide; board.ErrNotFound
// when it has none there.
func (s *Store) LatestMatrixReview(ctx context.Context, room string, run board.RunID, card board.CardID) (string, error) {
	var evt string
	err := s.pool.QueryRow(ctx, selectLatestMatrixReview, room, run, card).Scan(&evt)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("review announcement of %s: %w", card, board.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("load matrix review: %w", err)
	}
	return evt, nil
}
