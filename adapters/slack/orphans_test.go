package slack_test

// Drafts whose replica died or whose call timed out before their
// message was recorded: none is left beside its answer.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
)

// streamFor shows request p planning in its thread through ad and gives
// it a first draft card.
func streamFor(t *testing.T, ad *slack.Adapter, fs *fakeSlack, p board.Proposal) {
	t.Helper()
	ad.ShowPlanning(p.Thread, p.RequestID, "U_ALICE", "T1")
	fs.waitFor(t, "status", func(c call) bool { return isStatus(c) && c.Form.Get("thread_ts") == p.Thread.ID })
	if err := ad.Draft(context.Background(), bot.Draft{Request: p.RequestID, Thread: p.Thread, Title: p.Plan.NewBoard().Name, Cards: p.Plan.Actions[0].Cards[:1]}); err != nil {
		t.Fatal(err)
	}
}

// takenAway fails unless the message made was deleted and p's thread
// holds its preview alone.
func takenAway(t *testing.T, fs *fakeSlack, p board.Proposal, made call) {
	t.Helper()
	del := fs.waitFor(t, "the draft taken away", method("chat.delete"))
	if del.Form.Get("ts") != made.TS {
		t.Errorf("deleted %s; want the draft %s", del.Form.Get("ts"), made.TS)
	}
	onlyThePreview(t, fs, p)
}

// latePlaceholders is a stand-in Slack that refuses thread statuses and
// takes placeholders only after d.
func latePlaceholders(t *testing.T, d time.Duration) *fakeSlack {
	fs := newFakeSlack(t)
	fs.refuse = func(c call) string {
		if isStatus(c) {
			return "not_allowed_token_type"
		}
		return ""
	}
	fs.slow = func(c call) time.Duration {
		if isPlaceholder(c) {
			return d
		}
		return 0
	}
	return fs
}

// onlyThePreview fails unless p's thread holds one message, its preview.
func onlyThePreview(t *testing.T, fs *fakeSlack, p board.Proposal) {
	t.Helper()
	msgs := threadOf(fs.snapshot(), p.Thread.ID)
	if len(msgs) != 1 || !strings.Contains(msgs[0].metadata, string(p.ID)) {
		t.Errorf("the thread holds %+v; want p's preview alone", msgs)
	}
}

// A replica that dies between Slack making its streamed draft and
// recording the message's ts leaves a stream no record names. The
// replica that answers the request finds it in the thread, the one
// unfinished stream there, and ends it with the answer: the thread holds
// the preview alone, no draft beside it.
func TestAnswerEndsAStreamADeadReplicaNeverRecorded(t *testing.T) {
	t.Parallel()
	fs := newFakeSlack(t)
	env := bottest.New(t)
	mem := redisstore.NewInFlight(env.Redis, env.Prefix)
	work, die := context.WithCancel(context.Background())
	dead := adapterOn(t, work, fs, env, lostTS{mem}, 0)
	th := slackThread("C_DEAD", "1690000000.000921")
	p := newspaperProposal(t, bot.NewRequestID(), th)
	streamFor(t, dead, fs, p)
	start := fs.waitFor(t, "stream start", method("chat.startStream"))
	die()

	answeredInDraft(t, adapterOn(t, context.Background(), fs, env, mem, 0), fs, p, start)
	onlyThePreview(t, fs, p)
}

// timedOutStart is a request streaming its draft in channel through an
// adapter whose calls time out after timeout, once that start timed out
// (fs makes chat.startStream slow).
func timedOutStart(t *testing.T, fs *fakeSlack, channel string, timeout time.Duration) (*slack.Adapter, board.Proposal) {
	t.Helper()
	env := bottest.New(t)
	ad := adapterOn(t, context.Background(), fs, env, redisstore.NewInFlight(env.Redis, env.Prefix), timeout)
	p := newspaperProposal(t, bot.NewRequestID(), slackThread(channel, "1690000000.000931"))
	streamFor(t, ad, fs, p)
	time.Sleep(timeout + 100*time.Millisecond) // the start has timed out
	return ad, p
}

// startTakes is a delay for chat.startStream alone.
func startTakes(d time.Duration) func(call) time.Duration {
	return func(c call) time.Duration {
		if c.Method == "chat.startStream" {
			return d
		}
		return 0
	}
}

// A stream whose start timed out may still have been made by Slack: the
// answer looks for it in the thread and ends it, rather than posting
// beside it.
func TestAnswerEndsAStreamWhoseStartTimedOut(t *testing.T) {
	t.Parallel()
	fs := newFakeSlack(t)
	fs.late = startTakes(2 * time.Second) // made at once, answered late
	ad, p := timedOutStart(t, fs, "C_LATE", 300*time.Millisecond)
	answeredInDraft(t, ad, fs, p, fs.waitFor(t, "stream start", method("chat.startStream")))
	onlyThePreview(t, fs, p)
}

// A stream that Slack makes only after its start timed out and its
// answer was posted is taken away when the thread is looked at again.
func TestAStreamLandingAfterItsAnswerIsTakenAway(t *testing.T) {
	t.Parallel()
	fs := newFakeSlack(t)
	fs.slow = startTakes(700 * time.Millisecond) // made late
	ad, p := timedOutStart(t, fs, "C_LATER", 400*time.Millisecond)
	if _, err := ad.PostPreview(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	takenAway(t, fs, p, fs.waitFor(t, "stream start", method("chat.startStream")))
}

// While one request's draft streams in a thread, another request's draft
// there is posted as a message naming its request, not streamed: a
// thread's unfinished stream is one request's. Once the first is
// answered, a third request's draft streams again.
func TestOneDraftStreamsInAThreadAtATime(t *testing.T) {
	t.Parallel()
	fs := newFakeSlack(t)
	env := bottest.New(t)
	ad := adapterOn(t, context.Background(), fs, env, redisstore.NewInFlight(env.Redis, env.Prefix), 0)
	th := slackThread("C_TWO", "1690000000.000951")
	first := newspaperProposal(t, bot.NewRequestID(), th)
	streamFor(t, ad, fs, first)
	fs.waitFor(t, "first stream", method("chat.startStream"))

	second := newspaperProposal(t, bot.NewRequestID(), th)
	streamFor(t, ad, fs, second)
	posted := fs.waitFor(t, "second draft posted", func(c call) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.Form.Get("metadata"), string(second.RequestID))
	})
	if n := fs.count(method("chat.startStream")); n != 1 {
		t.Errorf("%d streams started in one thread at once; want 1", n)
	}
	if posted.Form.Get("thread_ts") != th.ID {
		t.Errorf("second draft posted in thread %q; want %q", posted.Form.Get("thread_ts"), th.ID)
	}

	if _, err := ad.PostPreview(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	fs.waitFor(t, "first stream stopped", method("chat.stopStream"))
	third := newspaperProposal(t, bot.NewRequestID(), th)
	streamFor(t, ad, fs, third)
	fs.waitFor(t, "third stream", func(c call) bool {
		return c.Method == "chat.startStream" && fs.count(method("chat.startStream")) == 2
	})
}

// setsLost is a replica's Memory that records nothing in a showing any
// more, as for a replica whose Redis connection broke for good.
type setsLost struct{ slack.Memory }

func (m setsLost) ShowingSet(context.Context, board.RequestID, map[string]string, time.Duration) error {
	return errRedisAway
}

// showingsUnread is a replica's Memory that cannot read a showing, as
// while Redis restarts.
type showingsUnread struct{ slack.Memory }

func (m showingsUnread) Showing(context.Context, board.RequestID) (map[string]string, error) {
	return nil, errRedisAway
}

// placeholderClaimed waits until request id's placeholder is claimed in
// its showing: on its way to Slack.
func placeholderClaimed(t *testing.T, mem *redisstore.InFlight, id board.RequestID) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		sh, err := mem.Showing(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if sh["msg"] == "placeholder" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no placeholder claimed: %v", sh)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A placeholder on its way while the answer waits for it with Redis
// away is not left beside the answer: the answer is posted and the
// thread looked at again, and the placeholder, landed by then (its
// replica, cut off from Redis, neither recorded nor took it away), is
// deleted (found by the soak: Redis restarted as a preview was waiting
// for its placeholder).
func TestAPlaceholderLandingWhileRedisIsAwayIsTakenAway(t *testing.T) {
	t.Parallel()
	fs := latePlaceholders(t, 1500*time.Millisecond)
	env := bottest.New(t)
	mem := redisstore.NewInFlight(env.Redis, env.Prefix)
	acked := adapterOn(t, context.Background(), fs, env, setsLost{mem}, 0)
	answering := adapterOn(t, context.Background(), fs, env, showingsUnread{mem}, 2*time.Second)
	th := slackThread("C_PH", "1690000000.000961")
	p := newspaperProposal(t, bot.NewRequestID(), th)
	acked.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
	placeholderClaimed(t, mem, p.RequestID)
	if _, err := answering.PostPreview(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	takenAway(t, fs, p, fs.waitFor(t, "placeholder", isPlaceholder))
}

// A late look at a thread whose replica stopped before the look was due
// is done by another replica: a placeholder landing after the stop (its
// own replica cut off from Redis, so it neither recorded nor took it
// away) is deleted all the same.
func TestALateLookIsDoneByAnotherReplicaWhenItsOwnStopped(t *testing.T) {
	t.Parallel()
	fs := latePlaceholders(t, 5*time.Second) // past the answer's wait for them
	env := bottest.New(t)
	mem := redisstore.NewInFlight(env.Redis, env.Prefix)
	acked := adapterOn(t, context.Background(), fs, env, setsLost{mem}, 0)
	work, stop := context.WithCancel(context.Background())
	defer stop()
	answering := adapterOn(t, work, fs, env, mem, 2*time.Second)
	th := slackThread("C_HANDOVER", "1690000000.000971")
	p := newspaperProposal(t, bot.NewRequestID(), th)
	acked.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
	placeholderClaimed(t, mem, p.RequestID)
	if _, err := answering.PostPreview(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	stop() // it looks at once, before the placeholder lands
	if err := answering.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	adapterOn(t, context.Background(), fs, env, mem, 2*time.Second)
	takenAway(t, fs, p, fs.waitFor(t, "placeholder", isPlaceholder))
}
