package bot_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
)

// TestReviewNewsAtShutdownIsPosted: a runs worker commits a card to
// Review and is told to stop just then (its context is cancelled before
// it tells the thread, as serve stops the runs' workers first); the
// engine stops right after. The card's review announcement is still
// posted: the news reads the board under a context of its own and joins
// the thread's queue, which the stopping engine flushes.
func TestReviewNewsAtShutdownIsPosted(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	env.RunningNewspaper(t, "p_shutdown_news", "console:news")
	job, ok, err := env.Store.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	up, err := env.Store.CompleteRunCard(ctx, job, "Planner", "the policy")
	if err != nil || up.Card.Status != "Review" {
		t.Fatalf("complete: %+v %v", up.Card.Status, err)
	}
	stopping, stop := context.WithCancel(ctx)
	stop() // shutdown began between the commit and the news
	env.Engine.CardOutput(stopping, job, up)
	env.Stop()
	replies, _, _ := env.Poster.Snapshot()
	for _, rp := range replies {
		if rp.Thread.ID == "T1" && rp.Reply.Review != nil && rp.Reply.Review.Card == up.Card.ID &&
			strings.Contains(rp.Reply.Text, "is ready for review") {
			return
		}
	}
	t.Fatalf("the card's review was not announced before the engine stopped; posted: %+v", replies)
}

// goneRedis fails every write that records where a preview went, as a
// Redis that went away just after the preview was posted.
type goneRedis struct {
	bot.Proposals
	tries atomic.Int64
}

func (g *goneRedis) SetPreviewMessage(context.Context, board.ProposalID, board.MessageRef, time.Time) (bool, error) {
	g.tries.Add(1)
	return false, fmt.Errorf("set preview message: %w", bot.ErrUnavailable)
}

// TestStopWithRedisGoneAfterAPreview: the preview is posted and Redis
// goes away before it is recorded; the engine's recording retries, and
// stopping the engine ends those retries when its flush time is over,
// so Run returns within it (and a moment), not never.
func TestStopWithRedisGoneAfterAPreview(t *testing.T) {
	t.Parallel()
	gone := &goneRedis{}
	const flush = time.Second
	env := bottest.New(t, bottest.WithDeps(func(d *bot.Deps) { gone.Proposals = d.Proposals; d.Proposals = gone }), bottest.WithConfig(func(c *bot.Config) { c.FlushTimeout = flush }))
	answerNewspaper(t, env)
	if _, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest}); err != nil {
		t.Fatal(err)
	}
	env.Poster.WaitFor(t, "the preview", func(_ []bottest.PostedReply, previews, _ []board.Proposal) bool { return len(previews) == 1 })
	for gone.tries.Load() < 2 {
		time.Sleep(10 * time.Millisecond) // retrying the record
	}
	start := time.Now()
	env.Stop()
	if took := time.Since(start); took > flush+2*time.Second {
		t.Fatalf("the engine took %v to stop (flush time %v): a retry outlived the shutdown", took, flush)
	}
}
