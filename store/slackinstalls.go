package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

// Sealer encrypts tokens at rest; *secretbox.Box is one. The store only
// ever writes what SealUnder returned, and the key id beside it.
type Sealer interface {
	SealUnder(keyID string, plain, aad []byte) ([]byte, error)
	Open(sealed []byte, keyID string, aad []byte) ([]byte, error)
	// KeyID is the key this replica was configured to seal with, KeyIDs
	// every key it holds.
	KeyID() string
	KeyIDs() []string
}

// SlackInstallations is the Postgres table of Slack installations, with
// the tokens sealed by a Sealer under the newest key it holds (NewestKey).
type SlackInstallations struct {
	s   *Store
	box Sealer
	// sealKey is the newest key the box holds, as last learned.
	sealKey atomic.Pointer[string]
}

// SlackInstallations returns the installations table, sealing with box.
func (s *Store) SlackInstallations(box Sealer) *SlackInstallations {
	t := &SlackInstallations{s: s, box: box}
	id := box.KeyID()
	t.sealKey.Store(&id)
	return t
}

// learnKey finds the newest key the box holds and seals under it from
// now on.
func (t *SlackInstallations) learnKey(ctx context.Context) error {
	id, err := t.s.NewestKey(ctx, t.box.KeyID(), t.box.KeyIDs())
	if err != nil {
		return err
	}
	t.sealKey.Store(&id)
	return nil
}

// SealKey is the id of the key rows are sealed under now.
func (t *SlackInstallations) SealKey() string { return *t.sealKey.Load() }

// aad binds a sealed token to its row and column, so a ciphertext copied
// into another row (another workspace's) does not open there.
func aad(id, column string) []byte { return []byte("slack_installations/" + id + "/" + column) }

const installColumns = `installation_id, team_id, team_name, enterprise_id, is_enterprise_install, bot_user_id, app_id, scopes,
	installer_user_id, key_id, bot_token, refresh_token, token_expires_at, installed_at`

// sealed is a row's tokens as stored.
type sealed struct {
	keyID          string
	bot, refresh   []byte
	tokenExpiresAt *time.Time
}

func (t *SlackInstallations) seal(in board.SlackInstallation) (sealed, error) {
	out := sealed{keyID: t.SealKey()}
	var err error
	if out.bot, err = t.box.SealUnder(out.keyID, []byte(in.BotToken), aad(in.ID, "bot_token")); err != nil {
		return out, fmt.Errorf("seal slack installation %s: %w", in.ID, err)
	}
	if in.RefreshToken != "" {
		if out.refresh, err = t.box.SealUnder(out.keyID, []byte(in.RefreshToken), aad(in.ID, "refresh_token")); err != nil {
			return out, fmt.Errorf("seal slack installation %s: %w", in.ID, err)
		}
	}
	if !in.TokenExpiresAt.IsZero() {
		e := in.TokenExpiresAt.UTC()
		out.tokenExpiresAt = &e
	}
	return out, nil
}

// Save stores an installation, replacing an earlier one of the same id (a
// workspace installing again, with new scopes or tokens), sealed under
// the newest key the box holds.
func (t *SlackInstallations) Save(ctx context.Context, in board.SlackInstallation) error {
	if in.ID == "" || in.BotToken == "" {
		return errors.New("slack installation: id and bot token are required")
	}
	if err := t.learnKey(ctx); err != nil {
		return fmt.Errorf("save slack installation: %w", err)
	}
	sd, err := t.seal(in)
	if err != nil {
		return err
	}
	_, err = t.s.pool.Exec(ctx, `INSERT INTO slack_installations (`+installColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, now())
		ON CONFLICT (installation_id) DO UPDATE SET team_id = $2, team_name = $3, enterprise_id = $4,
			is_enterprise_install = $5, bot_user_id = $6, app_id = $7, scopes = $8, installer_user_id = $9,
			key_id = $10, bot_token = $11, refresh_token = $12, token_expires_at = $13, installed_at = now(), updated_at = now()`,
		in.ID, in.TeamID, in.TeamName, in.EnterpriseID, in.IsEnterpriseInstall, in.BotUserID, in.AppID, in.Scopes,
		in.InstallerUserID, sd.keyID, sd.bot, sd.refresh, sd.tokenExpiresAt)
	if err != nil {
		return fmt.Errorf("save slack installation: %w", err)
	}
	return nil
}

// Installation reads one installation, its tokens opened; ErrNotInstalled
// when there is none.
func (t *SlackInstallations) Installation(ctx context.Context, id string) (board.SlackInstallation, error) {
	in, _, err := t.read(ctx, t.s.pool.QueryRow(ctx, `SELECT `+installColumns+` FROM slack_installations WHERE installation_id = $1`, id))
	return in, err
}

// read scans one row and opens its tokens; it also says whether the row is
// sealed under an old key.
func (t *SlackInstallations) read(_ context.Context, row pgx.Row) (board.SlackInstallation, bool, error) {
	var in board.SlackInstallation
	var sd sealed
	err := row.Scan(&in.ID, &in.TeamID, &in.TeamName, &in.EnterpriseID, &in.IsEnterpriseInstall, &in.BotUserID, &in.AppID,
		&in.Scopes, &in.InstallerUserID, &sd.keyID, &sd.bot, &sd.refresh, &sd.tokenExpiresAt, &in.InstalledAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return in, false, board.ErrNotInstalled
	}
	if err != nil {
		return in, false, fmt.Errorf("read slack installation: %w", err)
	}
	bot, err := t.box.Open(sd.bot, sd.keyID, aad(in.ID, "bot_token"))
	if err != nil {
		return in, false, fmt.Errorf("open the bot token of slack installation %s: %w", in.ID, err)
	}
	in.BotToken = string(bot)
	if sd.refresh != nil {
		r, err := t.box.Open(sd.refresh, sd.keyID, aad(in.ID, "refresh_token"))
		if err != nil {
			return in, false, fmt.Errorf("open the refresh token of slack installation %s: %w", in.ID, err)
		}
		in.RefreshToken = string(r)
	}
	if sd.tokenExpiresAt != nil {
		in.TokenExpiresAt = *sd.tokenExpiresAt
	}
	return in, sd.keyID != t.SealKey(), nil
}

// Delete removes an installation (the app was uninstalled or its tokens
// revoked) made before asOf, the time of the uninstall; deleting one that
// is not there is no error. An installation made at asOf or later (the
// workspace installed again after the uninstall that Slack now delivers
// again) is kept: deleted says whether a row went.
func (t *SlackInstallations) Delete(ctx context.Context, id string, asOf time.Time) (deleted bool, err error) {
	tag, err := t.s.pool.Exec(ctx, `DELETE FROM slack_installations WHERE installation_id = $1 AND installed_at < $2`, id, asOf)
	if err != nil {
		return false, fmt.Errorf("delete slack installation: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}

// Refresh renews an installation's tokens at most once across replicas:
// under the row's lock (SELECT … FOR UPDATE) it reads the installation
// again and calls refresh only while due still says so, then stores what
// refresh returned. A replica that waited on the lock finds the tokens
// already renewed and returns them without calling Slack.
func (t *SlackInstallations) Refresh(ctx context.Context, id string, due func(board.SlackInstallation) bool,
	refresh func(context.Context, board.SlackInstallation) (board.SlackInstallation, error)) (board.SlackInstallation, error) {
	if err := t.learnKey(ctx); err != nil {
		return board.SlackInstallation{}, fmt.Errorf("refresh slack installation: %w", err)
	}
	tx, err := t.s.pool.Begin(ctx)
	if err != nil {
		return board.SlackInstallation{}, fmt.Errorf("refresh slack installation: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	in, _, err := t.read(ctx, tx.QueryRow(ctx, `SELECT `+installColumns+` FROM slack_installations WHERE installation_id = $1 FOR UPDATE`, id))
	if err != nil {
		return in, err
	}
	if !due(in) {
		return in, tx.Commit(ctx)
	}
	next, err := refresh(ctx, in)
	if err != nil {
		return in, err
	}
	next.ID = in.ID
	sd, err := t.seal(next)
	if err != nil {
		return in, err
	}
	if _, err := tx.Exec(ctx, `UPDATE slack_installations SET key_id = $2, bot_token = $3, refresh_token = $4,
		token_expires_at = $5, updated_at = now() WHERE installation_id = $1`, id, sd.keyID, sd.bot, sd.refresh, sd.tokenExpiresAt); err != nil {
		return in, fmt.Errorf("store refreshed slack tokens: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return in, fmt.Errorf("store refreshed slack tokens: %w", err)
	}
	return next, nil
}

// Reseal seals again, under the newest key the box holds (learned
// afresh: NewestKey), every installation sealed under another one, and
// returns how many it changed. It runs at start and then every minute on
// every replica, so a row a replica still on the old key wrote during a
// rotation is sealed under the new key soon after. A row that does not
// open (its key is not known at all) is left as it is and reported in the
// error; a row under any key the box holds never is.
func (t *SlackInstallations) Reseal(ctx context.Context) (int, error) {
	if err := t.learnKey(ctx); err != nil {
		return 0, fmt.Errorf("reseal slack installations: %w", err)
	}
	rows, err := t.s.pool.Query(ctx, `SELECT installation_id FROM slack_installations WHERE key_id <> $1`, t.SealKey())
	if err != nil {
		return 0, fmt.Errorf("reseal slack installations: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("reseal slack installations: %w", err)
	}
	n := 0
	var errs []error
	for _, id := range ids {
		changed, err := t.reseal(ctx, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if changed {
			n++
		}
	}
	return n, errors.Join(errs...)
}

func (t *SlackInstallations) reseal(ctx context.Context, id string) (bool, error) {
	tx, err := t.s.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("reseal slack installation %s: %w", id, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	in, old, err := t.read(ctx, tx.QueryRow(ctx, `SELECT `+installColumns+` FROM slack_installations WHERE installation_id = $1 FOR UPDATE`, id))
	if errors.Is(err, board.ErrNotInstalled) || (err == nil && !old) {
		return false, nil // gone, or resealed by another replica meanwhile
	}
	if err != nil {
		return false, err
	}
	sd, err := t.seal(in)
	if err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, `UPDATE slack_installations SET key_id = $2, bot_token = $3, refresh_token = $4 WHERE installation_id = $1`,
		id, sd.keyID, sd.bot, sd.refresh); err != nil {
		return false, fmt.Errorf("reseal slack installation %s: %w", id, err)
	}
	return true, tx.Commit(ctx)
}
