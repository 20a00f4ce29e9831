package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// When the feed's connection is lost (a restart, a failover), it listens
// again and ends every subscription open then, so each viewer reconnects
// and reloads rather than silently missing what changed meanwhile; a new
// subscription gets changes again.
func TestFeedEndsSubscriptionsWhenItListensAgain(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, cards := newspaperBoard(t, s, "console:feed-lost")
	feed := store.NewFeed(s, storetest.Logger(t))
	go func() { _ = feed.Run(ctx) }()
	events, stop := feed.Subscribe(id)
	defer stop()
	<-feed.Ready()
	var cut int
	if err := s.Pool().QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND query LIKE 'LISTEN %'`).Scan(&cut); err != nil || cut != 1 {
		t.Fatalf("ended %d listening sessions, %v; want 1", cut, err)
	}
	select {
	case ev, ok := <-events:
		if ok {
			t.Fatalf("got %+v, want the subscription ended", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the subscription was not ended within 10 s of the lost connection")
	}
	again, stopAgain := feed.Subscribe(id)
	defer stopAgain()
	if _, err := s.ChangeCard(ctx, board.CardChange{Card: cards["topic_policy"].ID, Actor: "carol", Via: "page", Status: ptr("In Progress")}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-again:
		if ev.Card.Status != "In Progress" || ev.Actor != "carol" {
			t.Fatalf("event = %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("no event after the feed listened again")
	}
}
