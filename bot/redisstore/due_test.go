package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
)

// Of many callers taking a due set's members at once, each member goes to
// one; a member not yet due, or dropped, goes to none; a member taken and
// not dropped falls due again when its lease ends.
func TestDueMembersAreTakenOnceWhenDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redisstore.NewInFlight(bottest.Redis(t), bottest.Prefix())
	now := time.Now()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for i := range 30 {
		m := fmt.Sprint("due-", i)
		want = append(want, m)
		must(s.AddDue(ctx, "sweeps", m, now.Add(-time.Duration(i)*time.Millisecond)))
	}
	must(s.AddDue(ctx, "sweeps", "later", now.Add(time.Hour)))
	must(s.AddDue(ctx, "sweeps", "dropped", now.Add(-time.Second)))
	must(s.DropDue(ctx, "sweeps", "dropped"))

	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				due, err := s.TakeDue(ctx, "sweeps", now, 3, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if len(due) == 0 {
					return
				}
				mu.Lock()
				got = append(got, due...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("taken %v; want each due member once: %v", got, want)
	}
	for _, m := range want[1:] {
		must(s.DropDue(ctx, "sweeps", m))
	}
	// Two minutes on, the leases have ended: the one member not dropped
	// (its taker died, say) is due again, with the one due an hour on.
	due, err := s.TakeDue(ctx, "sweeps", now.Add(2*time.Minute), 10, time.Minute)
	if must(err); !slices.Equal(due, want[:1]) {
		t.Errorf("taken two minutes on: %v; want %v again", due, want[:1])
	}
	must(s.DropDue(ctx, "sweeps", want[0])) // done this time
	due, err = s.TakeDue(ctx, "sweeps", now.Add(2*time.Hour), 10, time.Minute)
	if must(err); !slices.Equal(due, []string{"later"}) {
		t.Errorf("taken two hours on: %v; want [later] alone (the others dropped)", due)
	}
}
