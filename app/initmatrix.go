package app

import (
	"context"
	"fmt"
	"log/slog"

	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/adapters/matrix"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// initMatrix wires the Matrix adapter when MATRIX_HOMESERVER and
// MATRIX_USER_ID are set (config validation has checked that a token or
// password comes with them); otherwise it returns nil and Matrix is off.
// It logs in, so a wrong token fails the start with a message naming it.
func initMatrix(ctx context.Context, cfg Config, st *stores, engine *bot.Engine, logger *slog.Logger) (*matrix.Adapter, error) {
	if cfg.MatrixHomeserver == "" || cfg.MatrixUserID == "" {
		return nil, nil
	}
	mcfg := matrix.Config{
		Homeserver: cfg.MatrixHomeserver, UserID: id.UserID(cfg.MatrixUserID),
		AccessToken: cfg.MatrixAccessToken, Password: cfg.MatrixPassword,
		AllowedServers: cfg.MatrixAllowedServers, PublicURL: cfg.PublicURL,
	}
	for _, r := range cfg.MatrixAllowedRooms {
		mcfg.AllowedRooms = append(mcfg.AllowedRooms, id.RoomID(r))
	}
	if cfg.MatrixPickleKey != "" {
		mcfg.Encryption = &matrix.Encryption{DatabaseURL: cfg.DatabaseURL, PickleKey: cfg.MatrixPickleKey}
	} else {
		logger.Info("matrix: end-to-end encryption is off; set MATRIX_PICKLE_KEY to take part in encrypted rooms")
	}
	lease := matrix.NewRedisLease(st.rdb, cfg.RedisPrefix+":matrix-sync-lease:"+cfg.MatrixUserID, matrix.DefaultLeaseTTL)
	ad, err := matrix.New(ctx, mcfg, engine, st.db, st.pending, lease, logger)
	if err != nil {
		return nil, fmt.Errorf("matrix (MATRIX_HOMESERVER %s): %w", cfg.MatrixHomeserver, err)
	}
	engine.Register(board.SourceMatrix, bot.Registration{Poster: ad, Reminders: ad, PowerLevels: ad, Drafts: ad, Runs: ad})
	return ad, nil
}

// runMatrix runs the adapter's sync loop (while this replica holds the
// lease) until ctx ends; a nil adapter does nothing. The adapter stays
// open for posting: the caller closes it once the engine has stopped.
func runMatrix(ctx context.Context, ad *matrix.Adapter, logger *slog.Logger) {
	if ad == nil {
		return
	}
	if err := ad.Run(ctx); err != nil && ctx.Err() == nil {
		logger.Error("matrix stopped", "err", err)
	}
}
