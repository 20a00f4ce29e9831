package slack

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	slackapi "github.com/slack-go/slack"
)

// countedMarks counts the reads of marks.
type countedMarks struct {
	*marks
	reads atomic.Int64
}

func (m *countedMarks) Marked(ctx context.Context, key string) (bool, error) {
	m.reads.Add(1)
	return m.marks.Marked(ctx, key)
}

// A mention in a workspace that refused nothing reads no refusal mark
// from Redis once a replica has read them; a refusal another replica
// noted (the workspace's, or one channel's) is seen within refusalsKept,
// the noting replica's own at once, and another channel stays unrefused.
func TestRefusalsAreKeptBriefly(t *testing.T) {
	mem := &countedMarks{marks: &marks{m: map[string]bool{}}}
	replica := func() *Adapter {
		a, err := New(context.Background(), Config{BotToken: "xoxb-t", SigningSecret: "s", APIURL: "http://127.0.0.1:1/api/"},
			inertEngine{}, mem, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a, b := replica(), replica()
	// age makes everything a replica read look refusalsKept old.
	age := func(r *Adapter) {
		r.refusals.mu.Lock()
		defer r.refusals.mu.Unlock()
		for k, s := range r.refusals.seen {
			s.at = s.at.Add(-refusalsKept)
			r.refusals.seen[k] = s
		}
	}
	ctx := context.Background()
	if a.refusedBefore(ctx, "status", "C1") {
		t.Fatal("nothing refused yet")
	}
	read := mem.reads.Load()
	for range 100 {
		a.refusedBefore(ctx, "status", "C1")
	}
	if n := mem.reads.Load() - read; n != 0 {
		t.Fatalf("100 mentions read %d refusal marks; want none (kept)", n)
	}

	b.noteRefusal(ctx, "status", "C2", slackapi.SlackErrorResponse{Err: "method_not_supported_for_channel_type"})
	if !b.refusedBefore(ctx, "status", "C2") || b.refusedBefore(ctx, "status", "C1") {
		t.Fatal("the replica that noted C2's refusal: want C2 refused at once, C1 not")
	}
	if a.refusedBefore(ctx, "status", "C2") {
		t.Fatal("another replica saw C2's refusal before its kept answer aged")
	}
	age(a)
	if !a.refusedBefore(ctx, "status", "C2") || a.refusedBefore(ctx, "status", "C1") {
		t.Fatal("another replica, refusalsKept later: want C2 refused, C1 not")
	}

	b.noteRefusal(ctx, "stream", "C1", slackapi.SlackErrorResponse{Err: "missing_scope"})
	age(a)
	if !a.refusedBefore(ctx, "stream", "C3") {
		t.Fatal("a workspace's refusal: want every channel refused")
	}
}
