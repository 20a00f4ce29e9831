package bot_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
)

// latePoster posts every preview, but answers only after the post
// timeout has passed, as a chat API that is slow to respond does.
type latePoster struct {
	*bottest.Poster
	late time.Duration
}

func (l latePoster) PostPreview(ctx context.Context, p board.Proposal) (board.MessageRef, error) {
	time.Sleep(l.late)
	return l.Poster.PostPreview(ctx, p)
}

// A preview whose post answers past the post timeout was posted: it is
// recorded as posted, and the request is answered and acknowledged, not
// reclaimed and previewed again.
func TestLatePostIsPostedOnce(t *testing.T) {
	t.Parallel()
	env := bottest.New(t, bottest.WithConfig(func(c *bot.Config) { c.PostTimeout = 300 * time.Millisecond }))
	answerNewspaper(t, env)
	env.Engine.Register(board.SourceConsole, bot.Registration{Poster: latePoster{Poster: env.Poster, late: 700 * time.Millisecond}})
	id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	if st := env.WaitRequest(t, id); st.State != board.RequestDone || st.ProposalID == "" {
		t.Fatalf("status = %+v", st)
	}
	env.WaitIdle(t)
	// Past a reclaim time (1 s): a request left unacknowledged would be
	// posted again by now.
	time.Sleep(1500 * time.Millisecond)
	if _, previews, _ := env.Poster.Snapshot(); len(previews) != 1 {
		t.Fatalf("previews = %d, want 1", len(previews))
	}
}

// halfPoster sends the preview, then fails at something of its own after
// it (as Matrix does when it cannot record the preview's event).
type halfPoster struct{ *bottest.Poster }

func (h halfPoster) PostPreview(ctx context.Context, p board.Proposal) (board.MessageRef, error) {
	ref, _ := h.Poster.PostPreview(ctx, p)
	return ref, errors.New("save preview: database unavailable")
}

// A preview that was sent is not sent again because the adapter failed
// after sending it.
func TestPreviewSentWithAnErrorIsPostedOnce(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	answerNewspaper(t, env)
	env.Engine.Register(board.SourceConsole, bot.Registration{Poster: halfPoster{env.Poster}})
	id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitRequest(t, id)
	env.WaitIdle(t)
	if _, previews, _ := env.Poster.Snapshot(); len(previews) != 1 {
		t.Fatalf("previews = %d, want 1", len(previews))
	}
	if st.State != board.RequestDone {
		t.Fatalf("status = %+v", st)
	}
}

// stuckPoster never gets a preview out: every post hangs until it times
// out.
type stuckPoster struct {
	bottest.Poster
	attempts atomic.Int64
	started  chan struct{}
}

func (s *stuckPoster) PostPreview(ctx context.Context, _ board.Proposal) (board.MessageRef, error) {
	s.attempts.Add(1)
	select {
	case s.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return "", ctx.Err()
}

// A request whose preview never gets out, and whose worker stops while
// posting every time, is reclaimed and tried again only MaxDeliveries
// times; then it is closed as failed instead of being posted forever.
func TestPostingIsBoundedAcrossReclaims(t *testing.T) {
	t.Parallel()
	short := bottest.WithConfig(func(c *bot.Config) { c.PostTimeout = 200 * time.Millisecond })
	env := bottest.New(t, short)
	answerNewspaper(t, env)
	stuck := &stuckPoster{started: make(chan struct{}, 1)}
	env.Engine.Register(board.SourceConsole, bot.Registration{Poster: stuck})
	id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	cur := env
	finished := func() bool {
		st, err := env.Engine.Request(context.Background(), id)
		return err == nil && (st.State == board.RequestDone || st.State == board.RequestFailed)
	}
	for range 2 * bot.MaxDeliveries {
		posting := false
		for deadline := time.Now().Add(10 * time.Second); !posting && time.Now().Before(deadline) && !finished(); {
			select {
			case <-stuck.started:
				posting = true
			case <-time.After(50 * time.Millisecond):
			}
		}
		if !posting {
			break
		}
		cur.Stop() // stops while the post hangs: the request is left unacknowledged
		select {
		case <-stuck.started: // a later attempt of the stopped worker
		default:
		}
		// The stuck poster from the start: set after, the replica could
		// post with the recording one first.
		cur = bottest.New(t, bottest.ReplicaOf(env), bottest.WithConsole(bot.Registration{Poster: stuck}), short)
	}
	st := cur.WaitRequest(t, id)
	if st.State != board.RequestFailed || !strings.Contains(st.Error, "given up") {
		t.Errorf("status = %+v, want failed, given up", st)
	}
	cur.WaitIdle(t)
	// Three attempts a delivery (a stopping worker may finish them).
	if n, most := stuck.attempts.Load(), int64(3*bot.MaxDeliveries); n > most {
		t.Errorf("posted %d times, want at most %d", n, most)
	}
}

// flakyPreviewRef fails to record where a preview went a few times, as a
// Redis restarting for a moment does.
type flakyPreviewRef struct {
	bot.Proposals
	fails atomic.Int64
}

func (f *flakyPreviewRef) SetPreviewMessage(ctx context.Context, id board.ProposalID, ref board.MessageRef, expires time.Time) (bool, error) {
	if f.fails.Add(-1) >= 0 {
		return false, fmt.Errorf("set preview message: %w", bot.ErrUnavailable)
	}
	return f.Proposals.SetPreviewMessage(ctx, id, ref, expires)
}

// A preview whose message could not be recorded at once (Redis away for a
// moment) is recorded when Redis is back, so a reclaim does not post it
// again. The soak test found the second preview when the first failure
// was the last word.
func TestPreviewRefRecordedAfterARedisBlip(t *testing.T) {
	t.Parallel()
	flaky := &flakyPreviewRef{}
	flaky.fails.Store(3)
	env := bottest.New(t, bottest.WithDeps(func(d *bot.Deps) { flaky.Proposals = d.Proposals; d.Proposals = flaky }))
	answerNewspaper(t, env)
	id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitRequest(t, id)
	env.WaitIdle(t)
	time.Sleep(1500 * time.Millisecond) // past a reclaim
	p, err := env.Engine.Proposal(context.Background(), st.ProposalID)
	if _, previews, _ := env.Poster.Snapshot(); len(previews) != 1 || err != nil || p.Message == "" {
		t.Fatalf("previews = %d, message %q, %v", len(previews), p.Message, err)
	}
}

// blockingPoster takes every preview and answers only when released, as a
// chat API that has the message but is slow to say so.
type blockingPoster struct {
	*bottest.Poster
	entered chan struct{}
	release chan struct{}
}

func (b *blockingPoster) PostPreview(ctx context.Context, p board.Proposal) (board.MessageRef, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	return b.Poster.PostPreview(ctx, p)
}

// submitToBlockedPoster submits the newspaper request to env through a
// blockingPoster and returns once its preview's post has begun, with the
// request's id and what releases the post (also called at the test's
// end, before the engines stop, whatever failed).
func submitToBlockedPoster(t *testing.T, env *bottest.Env) (board.RequestID, func()) {
	t.Helper()
	answerNewspaper(t, env)
	blocked := &blockingPoster{Poster: env.Poster, entered: make(chan struct{}, 1), release: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(blocked.release) }) }
	t.Cleanup(release)
	env.Engine.Register(board.SourceConsole, bot.Registration{Poster: blocked})
	id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-blocked.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the preview was never posted")
	}
	return id, release
}

// TestTakenOverRequestIsNotPostedTwice: a request taken over from a worker
// that is still posting its preview (its lease ran out while the chat API
// was slow) is left to that worker, which posts it once and records it.
// The soak test saw both post when the first worker's lease was not
// renewed in time.
func TestTakenOverRequestIsNotPostedTwice(t *testing.T) {
	t.Parallel()
	first := bottest.New(t, bottest.WithConfig(func(c *bot.Config) { c.PostTimeout = 20 * time.Second }))
	id, release := submitToBlockedPoster(t, first)
	// The first worker stops renewing its lease; a second replica takes
	// the request over.
	first.Cancel()
	second := bottest.New(t, bottest.ReplicaOf(first))
	time.Sleep(3 * time.Second) // past the reclaim time (1 s), a few sweeps
	if _, previews, _ := second.Poster.Snapshot(); len(previews) != 0 {
		t.Fatalf("the second replica posted %d previews while the first was posting", len(previews))
	}
	release()
	st := second.WaitRequest(t, id)
	time.Sleep(1500 * time.Millisecond)
	_, firsts, _ := first.Poster.Snapshot()
	_, seconds, _ := second.Poster.Snapshot()
	p, _ := second.Engine.Proposal(context.Background(), st.ProposalID)
	if len(firsts)+len(seconds) != 1 || p.Message == "" {
		t.Fatalf("previews: first %d, second %d; recorded message %q", len(firsts), len(seconds), p.Message)
	}
}

// A request whose preview's posting claim is held by a worker that froze
// (SIGKILLed, in the soak) is posted once that claim runs out, though
// reclaims come faster than the claim lives: the worker that took it over
// waits for the claim, holding the request, instead of handing it back to
// be reclaimed until MaxDeliveries gives it up. The soak saw one given up.
func TestPostingClaimOfADeadWorkerIsWaitedOut(t *testing.T) {
	t.Parallel()
	short := bottest.WithConfig(func(c *bot.Config) { c.PostTimeout = 300 * time.Millisecond })
	first := bottest.New(t, short)
	id, _ := submitToBlockedPoster(t, first)
	claimedAt := time.Now()
	first.Cancel() // stops renewing its lease; its post never returns
	second := bottest.New(t, bottest.ReplicaOf(first), short)
	st := second.WaitRequest(t, id)
	if st.State != board.RequestDone {
		t.Fatalf("status = %+v, want done (reclaims every second, %d deliveries at most, a claim of 10.3 s)", st, bot.MaxDeliveries)
	}
	if waited := time.Since(claimedAt); waited < 10*time.Second {
		t.Errorf("answered %s after the first claim, before the claim ran out", waited)
	}
	_, previews, _ := second.Poster.Snapshot()
	p, _ := second.Engine.Proposal(context.Background(), st.ProposalID)
	if len(previews) != 1 || p.Message == "" {
		t.Fatalf("the second replica posted %d previews; recorded message %q", len(previews), p.Message)
	}
}

// downPoster fails every post as a store of BobNet's own failing over
// does (ErrUnavailable: the claim of the preview refused while Redis
// promotes a replica), until up, then posts.
type downPoster struct {
	*bottest.Poster
	up       time.Time
	refusals atomic.Int64
}

func (d *downPoster) PostPreview(ctx context.Context, p board.Proposal) (board.MessageRef, error) {
	if time.Now().Before(d.up) {
		d.refusals.Add(1)
		return "", fmt.Errorf("claim proposal: %w: redis: connection refused", bot.ErrUnavailable)
	}
	return d.Poster.PostPreview(ctx, p)
}

// submitBehindDownStore submits the newspaper request to env with
// posts refused as by a store of BobNet's own down for the time down.
func submitBehindDownStore(t *testing.T, env *bottest.Env, down time.Duration) (board.RequestID, *downPoster) {
	t.Helper()
	answerNewspaper(t, env)
	d := &downPoster{Poster: env.Poster, up: time.Now().Add(down)}
	env.Engine.Register(board.SourceConsole, bot.Registration{Poster: d})
	id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	return id, d
}

// wantPostedOnce waits for request id's answer and checks it is done,
// with its proposal, no error, and one preview posted.
func wantPostedOnce(t *testing.T, env *bottest.Env, id board.RequestID) {
	t.Helper()
	st := env.WaitRequest(t, id)
	env.WaitIdle(t)
	if st.State != board.RequestDone || st.ProposalID == "" || st.Error != "" {
		t.Fatalf("status = %+v; want done with its proposal and no error", st)
	}
	if _, previews, _ := env.Poster.Snapshot(); len(previews) != 1 {
		t.Fatalf("previews = %d, want 1", len(previews))
	}
}

// An answer whose post meets BobNet's own store failing over for
// seconds (the soak saw 4–9 s of a dead master's slots refused) is
// posted once the store is back, not closed as not posted.
func TestAnswerWaitsOutAStoreFailingOver(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	id, down := submitBehindDownStore(t, env, 3*time.Second)
	wantPostedOnce(t, env, id)
	if down.refusals.Load() < 2 {
		t.Fatalf("refusals = %d; the store was down for none of the posts", down.refusals.Load())
	}
}

// A store unavailable for longer than an answer waits (UnavailableRetry)
// leaves the request to be reclaimed, not closed as not posted; a later
// delivery posts it.
func TestAnswerOutlastingItsWaitIsReclaimed(t *testing.T) {
	t.Parallel()
	env := bottest.New(t, bottest.WithConfig(func(c *bot.Config) { c.UnavailableRetry = 300 * time.Millisecond }))
	id, _ := submitBehindDownStore(t, env, 2500*time.Millisecond)
	// Past the first delivery's wait, and before the store is back, the
	// request is not closed.
	time.Sleep(1200 * time.Millisecond)
	if st, err := env.Engine.Request(context.Background(), id); err != nil || st.State == board.RequestDone || st.State == board.RequestFailed {
		t.Fatalf("while the store is down: %+v, %v; want the request still open", st, err)
	}
	wantPostedOnce(t, env, id)
}
