// Package matrix is BobNet in Matrix rooms: it syncs as a bot user on a
// homeserver, turns mentions and thread replies into engine requests and
// reactions and thread commands into decisions, and is the engine's poster
// for Matrix rooms (threaded m.notice previews, edited once decided).
package matrix

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// Engine is what the Matrix adapter needs from the bot engine: what every
// chat surface asks; *bot.Engine is one.
type Engine = bot.Surface

// Memory remembers event ids across replicas and restarts, so a
// redelivered reaction or command acts once, and the notices of work in
// progress (Notes, drafts.go); *redisstore.InFlight is one.
type Memory interface {
	SeenOnce(ctx context.Context, key string, ttl time.Duration) (bool, error)
	Notes
}

// State is where the adapter keeps its state in Postgres; *store.Store is
// one, wired in app. Each part is declared beside the code that
// uses it. A row that is not there is board.ErrNotFound.
type State interface {
	Sessions
	SyncPositions
	Previews
	Reviews
	CrossSigningKeys
}

// Sessions keeps the bot's login (device and token), so a restart reuses
// the device and replicas share a renewed token.
type Sessions interface {
	MatrixSession(ctx context.Context, user string) (board.MatrixSession, error)
	SaveMatrixSession(ctx context.Context, user string, sess board.MatrixSession) error
}

// Config is the bot account's settings.
type Config struct {
	Homeserver  string
	UserID      id.UserID
	AccessToken string
	// Password logs in when there is no access token; the device and token
	// it gets are kept in Postgres and reused on restart.
	Password string
	// AllowedServers are the servers whose users may invite the bot;
	// empty means the bot's own server.
	AllowedServers []string
	// AllowedRooms may invite the bot whoever sends the invite.
	AllowedRooms []id.RoomID
	PublicURL    string
	// CallTimeout bounds every call to the homeserver (default 20s); the
	// sync long-poll gets it on top of its 30 s.
	CallTimeout time.Duration
	// LeaseTTL is how long a replica holds the sync loop without renewing
	// it (default DefaultLeaseTTL); another replica takes over within about that long.
	LeaseTTL time.Duration
	// Encryption turns on end-to-end encryption (see crypto.go).
	Encryption *Encryption
}

// Adapter is BobNet in Matrix; it is also the engine's poster for Matrix
// rooms. Every replica can post; one at a time runs the sync loop.
type Adapter struct {
	cfg     Config
	cli     *mautrix.Client
	eng     Engine
	store   State
	memory  Memory
	lease   Lease
	logger  *slog.Logger
	crypto  cryptoCloser
	name    string // the bot's display name, for mentions in plain text
	syncing chan struct{}
	started time.Time
	power   powerCache
	// pace keeps edits of drafts and run progress to one a second each.
	pace *pacer

	// relogin is set once New is done, when there is a password to log
	// in again with after the token is revoked.
	relogin bool
	loginMu sync.Mutex
	token   string // the access token in use, guarded by loginMu

	// work bounds what the sync loop hands off (decisions, notices) so the
	// loop never waits on them.
	work    context.Context
	stop    context.CancelFunc
	running sync.WaitGroup
}

// DefaultLeaseTTL is how long a replica holds the sync loop between
// renewals unless configured otherwise.
const DefaultLeaseTTL = 15 * time.Second

// ErrConfig is wrapped by New when the settings cannot work.
var ErrConfig = errors.New("matrix: invalid configuration")

// New logs in (or reuses the saved device) and returns an adapter. Nothing
// syncs until Run; lease may be nil for an adapter that only posts.
func New(ctx context.Context, cfg Config, eng Engine, store State, memory Memory, lease Lease, logger *slog.Logger) (*Adapter, error) {
	if cfg.Homeserver == "" || cfg.UserID == "" {
		return nil, fmt.Errorf("%w: MATRIX_HOMESERVER and MATRIX_USER_ID are required", ErrConfig)
	}
	if cfg.AccessToken == "" && cfg.Password == "" {
		return nil, fmt.Errorf("%w: MATRIX_ACCESS_TOKEN or MATRIX_PASSWORD is required", ErrConfig)
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 20 * time.Second
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if len(cfg.AllowedServers) == 0 {
		cfg.AllowedServers = []string{cfg.UserID.Homeserver()}
	}
	cli, err := mautrix.NewClient(cfg.Homeserver, cfg.UserID, "")
	if err != nil {
		return nil, fmt.Errorf("%w: MATRIX_HOMESERVER: %w", ErrConfig, err)
	}
	// Rate limits are honoured by call(), which reads retry_after_ms too.
	cli.IgnoreRateLimit = true
	cli.DefaultHTTPRetries = 0
	cli.Store = syncStore{store}
	work, stop := context.WithCancel(context.WithoutCancel(ctx))
	a := &Adapter{cfg: cfg, cli: cli, eng: eng, store: store, memory: memory, lease: lease, logger: logger,
		syncing: make(chan struct{}, 1), work: work, stop: stop, started: time.Now()}
	a.pace = newPacer(editEvery, a.async, logger)
	if err := a.login(ctx); err != nil {
		stop()
		return nil, err
	}
	if err := a.call(ctx, "get display name", func(ctx context.Context) error {
		resp, err := cli.GetOwnDisplayName(ctx)
		if err == nil {
			a.name = resp.DisplayName
		}
		return err
	}); err != nil {
		a.logger.Warn("matrix: no display name; mentions by name are not recognised", "err", err)
	}
	a.token = cli.AccessToken
	syncer := cli.Syncer.(*mautrix.DefaultSyncer)
	syncer.OnEventType(event.StateMember, a.onMember)
	syncer.OnEventType(event.EventMessage, a.onMessage)
	syncer.OnEventType(event.EventReaction, a.onReaction)
	syncer.OnEventType(event.StatePowerLevels, a.onPowerLevels)
	if cfg.Encryption != nil {
		if err := a.initCrypto(ctx, *cfg.Encryption); err != nil {
			stop()
			return nil, err
		}
	} else {
		syncer.OnEventType(event.EventEncrypted, a.onEncryptedWithoutKeys)
	}
	a.relogin = cfg.AccessToken == ""
	return a, nil
}

// UserID is the bot's Matrix user id.
func (a *Adapter) UserID() id.UserID { return a.cfg.UserID }

// DeviceID is the device the bot is logged in as.
func (a *Adapter) DeviceID() id.DeviceID { return a.cli.DeviceID }

// login uses the access token, or the saved session, or logs in with the
// password on the saved device so a restart is the same device (which
// matters for encryption: other users' clients trust that device).
func (a *Adapter) login(ctx context.Context) error {
	cli := a.cli
	whoami := func() error {
		return a.call(ctx, "whoami", func(ctx context.Context) error {
			resp, err := cli.Whoami(ctx)
			if err != nil {
				return err
			}
			if resp.UserID != a.cfg.UserID {
				return fmt.Errorf("%w: the access token belongs to %s, not MATRIX_USER_ID %s", ErrConfig, resp.UserID, a.cfg.UserID)
			}
			cli.DeviceID = resp.DeviceID
			return nil
		})
	}
	if a.cfg.AccessToken != "" {
		cli.AccessToken = a.cfg.AccessToken
		if err := whoami(); err != nil {
			return fmt.Errorf("matrix: MATRIX_ACCESS_TOKEN: %w", err)
		}
		return a.store.SaveMatrixSession(ctx, string(a.cfg.UserID), board.MatrixSession{DeviceID: string(cli.DeviceID)})
	}
	saved, err := a.store.MatrixSession(ctx, string(a.cfg.UserID))
	switch {
	case err == nil:
		cli.AccessToken, cli.DeviceID = saved.AccessToken, id.DeviceID(saved.DeviceID)
		err := whoami()
		if err == nil {
			return nil
		}
		if !errors.Is(err, mautrix.MUnknownToken) {
			return fmt.Errorf("matrix: saved session: %w", err)
		}
		a.logger.Info("matrix: saved token no longer valid; logging in again on the same device", "device", saved.DeviceID)
	case errors.Is(err, board.ErrNotFound):
	default:
		return err
	}
	var resp *mautrix.RespLogin
	err = a.call(ctx, "login", func(ctx context.Context) error {
		var err error
		resp, err = cli.Login(ctx, &mautrix.ReqLogin{
			Type:                     mautrix.AuthTypePassword,
			Identifier:               mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: string(a.cfg.UserID)},
			Password:                 a.cfg.Password,
			DeviceID:                 id.DeviceID(saved.DeviceID),
			InitialDeviceDisplayName: "BobNet",
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("matrix: MATRIX_PASSWORD: login: %w", err)
	}
	cli.AccessToken, cli.DeviceID = resp.AccessToken, resp.DeviceID
	return a.store.SaveMatrixSession(ctx, string(a.cfg.UserID), board.MatrixSession{DeviceID: string(resp.DeviceID), AccessToken: resp.AccessToken})
}

func (a *Adapter) currentToken() string {
	a.loginMu.Lock()
	defer a.loginMu.Unlock()
	return a.token
}

// renewToken replaces the revoked token stale: with the one saved in
// Postgres when another replica already logged in again, else by logging
// in with the password on the same device. Callers racing here renew once.
func (a *Adapter) renewToken(ctx context.Context, stale string) error {
	a.loginMu.Lock()
	defer a.loginMu.Unlock()
	if a.token != stale {
		return nil
	}
	if saved, err := a.store.MatrixSession(ctx, string(a.cfg.UserID)); err == nil && saved.AccessToken != stale && id.DeviceID(saved.DeviceID) == a.cli.DeviceID {
		a.setToken(saved.AccessToken)
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	defer cancel()
	resp, err := a.cli.Login(lctx, &mautrix.ReqLogin{
		Type:       mautrix.AuthTypePassword,
		Identifier: mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: string(a.cfg.UserID)},
		Password:   a.cfg.Password, DeviceID: a.cli.DeviceID, InitialDeviceDisplayName: "BobNet",
	})
	if err != nil {
		return fmt.Errorf("log in again: %w", err)
	}
	a.setToken(resp.AccessToken)
	a.logger.Info("matrix: the access token was revoked; logged in again on the same device", "device", a.cli.DeviceID)
	return a.store.SaveMatrixSession(ctx, string(a.cfg.UserID), board.MatrixSession{DeviceID: string(a.cli.DeviceID), AccessToken: resp.AccessToken})
}

// setToken swaps the client's token under mautrix's own token lock, which
// its requests read it under. The caller holds loginMu.
func (a *Adapter) setToken(token string) {
	a.token = token
	a.cli.OAuthSetTokens("", "", token, time.Time{})
}

// Close stops what the adapter handed off and waits for it.
func (a *Adapter) Close() {
	a.stop()
	a.running.Wait()
	if a.crypto != nil {
		if err := a.crypto.Close(); err != nil {
			a.logger.Warn("matrix: close crypto", "err", err)
		}
	}
}

// async runs f off the sync loop, bounded by the adapter's lifetime and a
// minute.
func (a *Adapter) async(f func(ctx context.Context)) {
	a.running.Add(1)
	go func() {
		defer a.running.Done()
		ctx, cancel := context.WithTimeout(a.work, time.Minute)
		defer cancel()
		f(ctx)
	}()
}

// maxRateLimitWaits bounds how often one call waits out M_LIMIT_EXCEEDED.
const maxRateLimitWaits = 5

// call runs one homeserver call with the call timeout, waiting out
// M_LIMIT_EXCEEDED for as long as the server's retry_after_ms (or
// Retry-After) says, a few times at most.
func (a *Adapter) call(ctx context.Context, what string, f func(ctx context.Context) error) error {
	return a.callFor(ctx, what, a.cfg.CallTimeout, f)
}

// callFor is call with a timeout of its own, for the sync long poll.
func (a *Adapter) callFor(ctx context.Context, what string, timeout time.Duration, f func(ctx context.Context) error) error {
	renewed := false
	for attempt := 0; ; attempt++ {
		stale := a.currentToken()
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err := f(cctx)
		cancel()
		if errors.Is(err, mautrix.MUnknownToken) && a.relogin && !renewed {
			// The token was revoked (or another replica replaced it):
			// pick up the saved one or log in again on the same device.
			renewed = true
			rerr := a.renewToken(ctx, stale)
			if rerr == nil {
				continue
			}
			a.logger.Warn("matrix: log in again", "err", rerr)
		}
		wait, limited := retryAfter(err)
		if !limited || attempt == maxRateLimitWaits {
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		}
		a.logger.Info("matrix: rate limited; waiting as the server asks", "call", what, "wait", wait)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// retryAfter reads how long a rate-limited call should wait.
func retryAfter(err error) (time.Duration, bool) {
	var he mautrix.HTTPError
	if err == nil || !errors.As(err, &he) || he.RespError == nil || he.RespError.ErrCode != mautrix.MLimitExceeded.ErrCode {
		return 0, false
	}
	wait := time.Second
	if ms, ok := he.RespError.ExtraData["retry_after_ms"].(float64); ok && ms > 0 {
		wait = time.Duration(ms) * time.Millisecond
	} else if he.Response != nil {
		if s := he.Response.Header.Get("Retry-After"); s != "" {
			var secs int
			if _, err := fmt.Sscan(s, &secs); err == nil && secs > 0 {
				wait = time.Duration(secs) * time.Second
			}
		}
	}
	return min(wait, 2*time.Minute), true
}

// Syncing reports whether this replica holds the sync loop now.
func (a *Adapter) Syncing() bool { return len(a.syncing) == 1 }

// allowedInvite says whether an invite into room by sender is accepted.
func (a *Adapter) allowedInvite(room id.RoomID, sender id.UserID) bool {
	return slices.Contains(a.cfg.AllowedRooms, room) || slices.Contains(a.cfg.AllowedServers, sender.Homeserver())
}

func channel(room id.RoomID) board.Channel {
	return board.Channel{Source: board.SourceMatrix, ID: string(room)}
}

// reactionKey strips the emoji variation selector some clients add.
func reactionKey(k string) string { return strings.ReplaceAll(k, "\ufe0f", "") }

// Encryption is how the bot keeps its end-to-end encryption keys: in
// Postgres (DatabaseURL, the same database as BobNet's), sealed with
// PickleKey.
type Encryption struct {
	DatabaseURL string
	PickleKey   string
}
