package bot_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
)

// watchTaking notes how a request's record stood at two moments: once the
// channel's board was read (slowly, so that writes begun beside the read
// would have landed), and while the model was asked.
type watchTaking struct {
	bot.BoardReader
	bot.Planner
	requests bot.Requests
	id       board.RequestID

	mu        sync.Mutex
	afterRead board.RequestState
	inModel   board.RequestState
}

func (w *watchTaking) state(ctx context.Context) board.RequestState {
	rec, err := w.requests.Request(ctx, w.id)
	if err != nil {
		return ""
	}
	return rec.Status.State
}

func (w *watchTaking) ChannelBoard(ctx context.Context, channel string) (board.Board, error) {
	b, err := w.BoardReader.ChannelBoard(ctx, channel)
	time.Sleep(300 * time.Millisecond)
	s := w.state(ctx)
	w.mu.Lock()
	w.afterRead = s
	w.mu.Unlock()
	return b, err
}

func (w *watchTaking) Plan(ctx context.Context, in planner.PromptInput, opts plan.Options) (planner.Outcome, error) {
	s := w.state(ctx)
	for deadline := time.Now().Add(5 * time.Second); s != board.RequestPlanning && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		s = w.state(ctx)
	}
	w.mu.Lock()
	w.inModel = s
	w.mu.Unlock()
	return w.Planner.Plan(ctx, in, opts)
}

// A request's taking (its record as planning, its audit row) is written
// while its model is asked: not beside the reads of what the model is
// shown, which twenty requests taken at once make on busy cores (the
// preview's figure in docs/operations.md), and not after the model,
// which would add the writes to the answer's time.
func TestTakingIsWrittenWhileTheModelIsAsked(t *testing.T) {
	t.Parallel()
	w := &watchTaking{id: bot.NewRequestID()}
	env := bottest.New(t, bottest.WithDeps(func(d *bot.Deps) {
		w.BoardReader, w.Planner, w.requests = d.Boards, d.Planner, d.Requests
		d.Boards, d.Planner = w, w
	}))
	answerNewspaper(t, env)
	if _, err := env.Engine.Submit(context.Background(), board.Request{ID: w.id, Thread: general, User: "alice", Text: newspaperRequest}); err != nil {
		t.Fatal(err)
	}
	env.Poster.WaitFor(t, "the preview", func(_ []bottest.PostedReply, previews, _ []board.Proposal) bool { return len(previews) == 1 })
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.afterRead != board.RequestQueued {
		t.Errorf("once the channel's board was read the request stood %q, want %q: its taking was written beside the reads", w.afterRead, board.RequestQueued)
	}
	if w.inModel != board.RequestPlanning {
		t.Errorf("while the model was asked the request stood %q, want %q within 5 s", w.inModel, board.RequestPlanning)
	}
}

// countReads counts the request records read one by one.
type countReads struct {
	bot.Requests
	reads atomic.Int64
}

func (c *countReads) Request(ctx context.Context, id board.RequestID) (board.RequestRecord, error) {
	c.reads.Add(1)
	return c.Requests.Request(ctx, id)
}

// A worker takes a request with its record, read in the round trip that
// claims the stream entry: planning it reads the record no more.
func TestRequestIsTakenWithItsRecord(t *testing.T) {
	t.Parallel()
	c := &countReads{}
	env := bottest.New(t, bottest.WithDeps(func(d *bot.Deps) { c.Requests = d.Requests; d.Requests = c }))
	answerNewspaper(t, env)
	if _, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest}); err != nil {
		t.Fatal(err)
	}
	env.Poster.WaitFor(t, "the preview", func(_ []bottest.PostedReply, previews, _ []board.Proposal) bool { return len(previews) == 1 })
	if n := c.reads.Load(); n != 0 {
		t.Fatalf("the worker read the request's record %d times, want 0: the queue hands it over", n)
	}
}
