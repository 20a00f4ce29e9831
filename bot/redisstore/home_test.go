package redisstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bobnet/bobnet/bot/bottest"
)

func TestHomeViewers(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, bottest.Redis(t), bottest.Prefix())
	now := time.Now()
	for i, u := range []string{"U_OLD", "U_A", "U_B"} {
		if err := s.AddHomeViewer(ctx, "slack", u, now.Add(time.Duration(i-2)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// U_A looks again: most recent now.
	if err := s.AddHomeViewer(ctx, "slack", "U_A", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, err := s.HomeViewers(ctx, "slack", now.Add(-90*time.Minute), 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"U_A", "U_B"}) {
		t.Fatalf("viewers = %v, want [U_A U_B]", got)
	}
	if got, _ := s.HomeViewers(ctx, "matrix", now.Add(-time.Hour), 10); len(got) != 0 {
		t.Fatalf("another surface's viewers = %v", got)
	}
}
