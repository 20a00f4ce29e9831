package bot_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
)

// refusingPoster is a chat platform that answers the first fails posts
// with a server error, as Slack now and then does (500), and records the
// rest.
type refusingPoster struct {
	*bottest.Poster
	mu    sync.Mutex
	fails int
}

func (p *refusingPoster) Reply(ctx context.Context, t board.Thread, r board.Reply) error {
	p.mu.Lock()
	if p.fails > 0 {
		p.fails--
		p.mu.Unlock()
		return errors.New("slack server error: 500")
	}
	p.mu.Unlock()
	return p.Poster.Reply(ctx, t, r)
}

// TestRunNewsIsTriedAgain: a run's news refused twice by the chat
// platform is still told, once (the run soak lost 3 of 55 run ends to
// single 500s before).
func TestRunNewsIsTriedAgain(t *testing.T) {
	t.Parallel()
	rp := &refusingPoster{Poster: &bottest.Poster{}, fails: 2}
	env := bottest.New(t, bottest.WithConsole(bot.Registration{Poster: rp}))
	ctx := context.Background()
	env.NewspaperBoard(t, "p_news", "console:news")
	if _, err := env.Engine.StartRun(ctx, board.Channel{Source: board.SourceConsole, ID: "news"}, "alice", ""); err != nil {
		t.Fatal(err)
	}
	rp.Poster.WaitFor(t, "the run's start told", func(replies []bottest.PostedReply, _, _ []board.Proposal) bool {
		for _, r := range replies {
			if strings.Contains(r.Reply.Text, "Run 1 started") {
				return true
			}
		}
		return false
	})
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.fails != 0 {
		t.Errorf("%d refusals left: the news was not tried again", rp.fails)
	}
}

// TestRunEndIsRecordedAsTold: a run's end, once posted, is recorded as
// told, so no replica tells it again; one left untold (its replica died)
// is told by RetellEnded without a second run.finished.
func TestRunEndIsRecordedAsTold(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	id := env.RunningNewspaper(t, "p_told", "console:told")
	runs, err := env.Store.Runs(ctx, id, 1)
	if err != nil || len(runs) != 1 {
		t.Fatal(runs, err)
	}
	r, err := env.Store.StopRun(ctx, runs[0].ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	told := func() bool {
		var at *time.Time
		if err := env.Store.Pool().QueryRow(ctx, `SELECT end_told_at FROM runs WHERE id = $1`, r.ID).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at != nil
	}
	env.Engine.Ended(ctx, r)
	deadline := time.Now().Add(20 * time.Second)
	for !told() {
		if time.Now().After(deadline) {
			t.Fatal("the run's end was posted but never recorded as told")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := env.Store.Pool().Exec(ctx, `UPDATE runs SET end_told_at = NULL WHERE id = $1`, r.ID); err != nil {
		t.Fatal(err)
	}
	env.Engine.RetellEnded(ctx, r)
	env.Poster.WaitFor(t, "the end told twice", func(replies []bottest.PostedReply, _, _ []board.Proposal) bool {
		n := 0
		for _, rp := range replies {
			if strings.Contains(rp.Reply.Text, "Run 1 stopped") {
				n++
			}
		}
		return n == 2
	})
	for deadline := time.Now().Add(20 * time.Second); !told(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the retold end was not recorded as told")
		}
	}
}
