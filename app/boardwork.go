package app

import (
	"context"
	"log/slog"

	"github.com/bobnet/bobnet/store"
)

// startLiveBoards runs the feed that carries card changes from Postgres to
// the board pages and event streams of this process (web.New's feed),
// until the returned stop is called.
func startLiveBoards(ctx context.Context, db *store.Store, logger *slog.Logger) (_ *store.Feed, stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	feed := store.NewFeed(db, logger)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = feed.Run(ctx)
	}()
	return feed, func() {
		cancel()
		<-done
	}
}
