package slack_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/store/storetest"
)

// A draft waiting for its channel's next slot when the answer comes ends
// there: the answer (chat.stopStream) goes at once, not a second after
// the draft's last call, and no draft call follows it. The slot the
// draft waited for is given back, so the channel's next call in progress
// (here, the status cleared) has it.
func TestAnswerDoesNotWaitForTheDraftsSlot(t *testing.T) {
	t.Parallel()
	fs := newFakeSlack(t)
	ad, p, start := draftStarted(t, context.Background(), fs, func(m slack.Memory) slack.Memory { return m }, "C_SLOT")
	// A second card: the draft waits for the channel's next slot.
	if err := ad.Draft(context.Background(), bot.Draft{Request: p.RequestID, Thread: p.Thread, Title: p.Plan.NewBoard().Name, Cards: p.Plan.Actions[0].Cards[:2]}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	asked := time.Now()
	if _, err := ad.PostPreview(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	stop := fs.waitFor(t, "stream stop", method("chat.stopStream"))
	if took := stop.At.Sub(asked); took > 500*time.Millisecond {
		t.Errorf("the answer came %s after it was ready (%s after the stream's start); want it at once", took, stop.At.Sub(start.At))
	}
	cleared := fs.waitForLatest(t, "status cleared", isStatus)
	if gap := cleared.At.Sub(start.At); cleared.Form.Get("status") != "" || gap < 850*time.Millisecond || gap > 1500*time.Millisecond {
		t.Errorf("status %q set %s after the stream's start; want it cleared in the slot the draft gave back, a second after", cleared.Form.Get("status"), gap)
	}
	if n := fs.count(method("chat.appendStream")); n != 0 {
		t.Errorf("%d draft calls after the answer ended the draft", n)
	}
}

// lostTS is a Memory that fails to record a draft message's ts, as when
// Redis restarts between the Slack call and the record.
type lostTS struct {
	slack.Memory
}

func (m lostTS) ShowingSet(ctx context.Context, id board.RequestID, fields map[string]string, ttl time.Duration) error {
	if _, ok := fields["ts"]; ok {
		return errors.New("redis: connection refused")
	}
	return m.Memory.ShowingSet(ctx, id, fields, ttl)
}

// adapterOn is a Slack adapter on work against the stand-in fs, for env's
// engine, remembering in memory; timeout is its calls' (0: the default).
func adapterOn(t *testing.T, work context.Context, fs *fakeSlack, env *bottest.Env, memory slack.Memory, timeout time.Duration) *slack.Adapter {
	t.Helper()
	cfg := slack.Config{BotToken: "xoxb-test", SigningSecret: secret, APIURL: fs.srv.URL + "/api/", PublicURL: "https://bobnet.example.com", Timeout: timeout}
	ad, err := slack.New(work, cfg, env.Engine, memory, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

// draftStarted is an adapter on work, with the Redis store wrapped by
// memory and the stand-in fs, and request p's draft streaming in a thread
// of channel; it returns the stream's start.
func draftStarted(t *testing.T, work context.Context, fs *fakeSlack, memory func(slack.Memory) slack.Memory, channel string) (*slack.Adapter, board.Proposal, call) {
	t.Helper()
	env := bottest.New(t)
	ad := adapterOn(t, work, fs, env, memory(redisstore.NewInFlight(env.Redis, env.Prefix)), 0)
	th := slackThread(channel, "1690000000.000911")
	p := newspaperProposal(t, bot.NewRequestID(), th)
	ad.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
	fs.waitFor(t, "status", isStatus)
	if err := ad.Draft(context.Background(), bot.Draft{Request: p.RequestID, Thread: th, Title: p.Plan.NewBoard().Name, Cards: p.Plan.Actions[0].Cards[:1]}); err != nil {
		t.Fatal(err)
	}
	return ad, p, fs.waitFor(t, "stream start", method("chat.startStream"))
}

// answeredInDraft fails unless p's preview stopped the stream start made
// and no message was posted beside it.
func answeredInDraft(t *testing.T, ad *slack.Adapter, fs *fakeSlack, p board.Proposal, start call) {
	t.Helper()
	ts, err := ad.PostPreview(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	stop := fs.waitFor(t, "stream stop", method("chat.stopStream"))
	if string(ts) != start.TS || stop.Form.Get("ts") != start.TS {
		t.Errorf("the preview is message %s (stopped %s), the draft %s", ts, stop.Form.Get("ts"), start.TS)
	}
	if n := fs.count(method("chat.postMessage")); n != 0 {
		t.Errorf("%d messages posted beside the draft", n)
	}
}

// A streamed draft whose message Redis could not record is still the
// one the answer ends when the same replica answers: it knows the
// message, so the thread holds one message, not the draft and the answer
// beside it.
func TestAnswerEndsADraftRedisDidNotRecord(t *testing.T) {
	t.Parallel()
	fs := newFakeSlack(t)
	ad, p, start := draftStarted(t, context.Background(), fs, func(m slack.Memory) slack.Memory { return lostTS{m} }, "C_LOST")
	answeredInDraft(t, ad, fs, p, start)
}

// claimRefused is a Memory whose Redis refuses the answer's claim on the
// draft message, as while Redis restarts (LOADING, then EXECABORT).
type claimRefused struct {
	slack.Memory
}

func (m claimRefused) ShowingClaim(ctx context.Context, id board.RequestID, field, value string, with map[string]string, ttl time.Duration) (bool, map[string]string, error) {
	if value == "answer" {
		return false, nil, errors.New("redis: EXECABORT Transaction discarded because of previous errors")
	}
	return m.Memory.ShowingClaim(ctx, id, field, value, with, ttl)
}

// An answer that cannot claim the draft's message because Redis is away
// still ends the draft this replica drew: only it knows the message, so
// no other replica can answer in it, and posting beside it would leave
// the draft and the answer in the thread.
func TestAnswerEndsItsOwnDraftWhileRedisIsAway(t *testing.T) {
	t.Parallel()
	fs := newFakeSlack(t)
	ad, p, start := draftStarted(t, context.Background(), fs, func(m slack.Memory) slack.Memory { return claimRefused{m} }, "C_AWAY")
	answeredInDraft(t, ad, fs, p, start)
}

// A replica told to stop while its draft's first call is on its way lets
// the call finish: the answer, drained before the replica stops, ends the
// stream the call made rather than posting beside it.
func TestStoppingReplicaFinishesTheDraftsCall(t *testing.T) {
	t.Parallel()
	fs := newFakeSlack(t)
	fs.mu.Lock()
	fs.late = func(c call) time.Duration {
		if c.Method == "chat.startStream" {
			return 500 * time.Millisecond
		}
		return 0
	}
	fs.mu.Unlock()
	work, stop := context.WithCancel(context.Background())
	defer stop()
	ad, p, start := draftStarted(t, work, fs, func(m slack.Memory) slack.Memory { return m }, "C_STOP")
	// The stand-in noted the stream's start as it came and answers it
	// half a second later: the call is on its way.
	stop() // SIGTERM: the answer below is the engine's drain
	answeredInDraft(t, ad, fs, p, start)
}

// A draft posted as a message (Slack refused the stream), whose message
// Redis could not record, is found in the thread by its metadata when
// another replica answers: the preview goes into it, not beside it.
func TestAnswerFromAnotherReplicaFindsAPostedDraft(t *testing.T) {
	t.Parallel()
	fs := newFakeSlack(t)
	fs.mu.Lock()
	fs.refuse = func(c call) string {
		if c.Method == "chat.startStream" {
			return "not_allowed_token_type"
		}
		return ""
	}
	fs.mu.Unlock()
	env := bottest.New(t)
	drawing := adapterOn(t, context.Background(), fs, env, lostTS{redisstore.NewInFlight(env.Redis, env.Prefix)}, 0)
	answering := adapterOn(t, context.Background(), fs, env, redisstore.NewInFlight(env.Redis, env.Prefix), 0)
	th := slackThread("C_POSTED", "1690000000.000921")
	p := newspaperProposal(t, bot.NewRequestID(), th)
	drawing.ShowPlanning(th, p.RequestID, "U_ALICE", "T1")
	fs.waitFor(t, "status", isStatus)
	if err := drawing.Draft(context.Background(), bot.Draft{Request: p.RequestID, Thread: th, Title: p.Plan.NewBoard().Name, Cards: p.Plan.Actions[0].Cards[:1]}); err != nil {
		t.Fatal(err)
	}
	draft := fs.waitFor(t, "posted draft", isPlaceholder)
	ts, err := answering.PostPreview(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if string(ts) != draft.TS {
		t.Errorf("the preview is message %s, the draft %s", ts, draft.TS)
	}
	fs.waitFor(t, "preview in the draft", func(c call) bool {
		return c.Method == "chat.update" && c.Form.Get("ts") == draft.TS && strings.Contains(c.Form.Get("blocks"), "bobnet_approve")
	})
	if n := fs.count(method("chat.postMessage")); n != 1 {
		t.Errorf("%d messages posted, want the draft alone", n)
	}
}

// A draft whose message takes no answer (its stream's stop and its
// update fail) is replaced by the answer posted beside it, and deleted
// even when Slack refuses the first delete: a draft left there reads as
// a second answer (found by the failover soak).
func TestReplacedDraftIsDeletedWhenTheFirstDeleteFails(t *testing.T) {
	t.Parallel()
	fs := newFakeSlack(t)
	ad, p, start := draftStarted(t, context.Background(), fs, func(m slack.Memory) slack.Memory { return m }, "C_DELETE")
	deletes := 0
	fs.mu.Lock()
	fs.refuse = func(c call) string {
		switch c.Method {
		case "chat.stopStream", "chat.update":
			return "internal_error"
		case "chat.delete":
			if deletes++; deletes == 1 {
				return "internal_error"
			}
		}
		return ""
	}
	fs.mu.Unlock()
	ts, err := ad.PostPreview(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if string(ts) == start.TS {
		t.Fatalf("the preview is the draft %s; want it posted beside", ts)
	}
	fs.waitFor(t, "the draft deleted", func(c call) bool {
		return c.Method == "chat.delete" && c.Form.Get("ts") == start.TS && c.Refused == ""
	})
}
