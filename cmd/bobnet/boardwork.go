package main

import (
	"context"
	"log/slog"

	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/web"
)

// startLiveBoards runs the feed that carries card changes from Postgres to
// the board pages and event streams of this process, until the returned
// stop is called.
func startLiveBoards(ctx context.Context, db *store.Store, pages *web.Pages, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	feed := store.NewFeed(db, logger)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = feed.Run(ctx)
	}()
	pages.Live(feed)
	return func() {
		cancel()
		<-done
	}
}
