package matrix

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix/id"
)

// sends records what a pacer sent, in order.
type sends struct {
	mu  sync.Mutex
	got []string
	wg  sync.WaitGroup
}

func (s *sends) of(what string) send {
	return func(_ context.Context, evt *id.EventID) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if *evt == "" {
			*evt = "$notice"
			what = "post " + what
		}
		s.got = append(s.got, what)
		return nil
	}
}

func (s *sends) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

func testPacer(s *sends, every time.Duration) *pacer {
	return newPacer(every, func(f func(context.Context)) {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); f(context.Background()) }()
	}, slog.New(slog.DiscardHandler))
}

// Updates within the interval are coalesced into the last one, sent when
// the interval is up; the first goes at once.
func TestPacerCoalescesToTheLastUpdate(t *testing.T) {
	t.Parallel()
	s := &sends{}
	p := testPacer(s, 200*time.Millisecond)
	ctx := context.Background()
	for i := range 5 {
		if err := p.update(ctx, "k", s.of(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.list(); !slices.Equal(got, []string{"post 0"}) {
		t.Fatalf("at once: %v, want only the first", got)
	}
	s.wg.Wait()
	if got := s.list(); !slices.Equal(got, []string{"post 0", "4"}) {
		t.Fatalf("after the interval: %v, want the first and the last", got)
	}
	// Another notice has a pace of its own.
	if err := p.update(ctx, "other", s.of("x")); err != nil {
		t.Fatal(err)
	}
	if got := s.list(); got[len(got)-1] != "post x" {
		t.Fatalf("another notice waited: %v", got)
	}
}

// The final update goes at once, drops the one waiting and ends the
// notice: nothing is sent after it.
func TestPacerFinalDropsWhatWaitsAndEnds(t *testing.T) {
	t.Parallel()
	s := &sends{}
	p := testPacer(s, 100*time.Millisecond)
	ctx := context.Background()
	_ = p.update(ctx, "k", s.of("draft 1"))
	_ = p.update(ctx, "k", s.of("draft 2"))
	if err := p.final(ctx, "k", s.of("answer")); err != nil {
		t.Fatal(err)
	}
	s.wg.Wait()
	_ = p.update(ctx, "k", s.of("late"))
	want := []string{"post draft 1", "answer", "post late"}
	// A late update after the final starts over: the notice is forgotten
	// (its owner's record says whether to draw it; drafts.go).
	if got := s.list(); !slices.Equal(got, want) {
		t.Fatalf("sent %v, want %v", got, want)
	}
	if n := len(p.notes); n != 1 {
		t.Fatalf("%d notices kept, want the late one", n)
	}
}

// Notices idle long are forgotten when another one starts.
func TestPacerForgetsIdleNotices(t *testing.T) {
	t.Parallel()
	s := &sends{}
	p := testPacer(s, time.Millisecond)
	ctx := context.Background()
	_ = p.update(ctx, "old", s.of("a"))
	p.notes["old"].last = time.Now().Add(-idleNote - time.Second)
	_ = p.update(ctx, "new", s.of("b"))
	if _, ok := p.notes["old"]; ok {
		t.Fatal("an idle notice is still kept")
	}
	if _, ok := p.notes["new"]; !ok {
		t.Fatal("the new notice is not kept")
	}
}
