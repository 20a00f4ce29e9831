package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/plan"
)

func newFreshStore(t *testing.T) *redisstore.InFlight {
	t.Helper()
	return newStore(t, bottest.Redis(t), bottest.Prefix())
}

func TestClaimHasOneWinnerAndCanBeGivenBack(t *testing.T) {
	t.Parallel()
	s := newFreshStore(t)
	ctx := context.Background()
	var wins atomic.Int32
	var wg sync.WaitGroup
	var winner string
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.Claim(ctx, "p_x", fmt.Sprint("u", i), time.Minute)
			if err != nil {
				t.Error(err)
			}
			if ok {
				wins.Add(1)
				winner = fmt.Sprint("u", i) // one writer: the test fails otherwise
			}
		}()
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Fatalf("winners = %d, want 1", n)
	}
	if ok, _ := s.Claim(ctx, "p_x", "late", time.Minute); ok {
		t.Fatal("claimed a held proposal")
	}
	if err := s.Release(ctx, "p_x", winner); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Claim(ctx, "p_x", "retry", time.Minute); err != nil || !ok {
		t.Fatalf("claim after release = %v, %v; want true", ok, err)
	}
}

// A claim is given back or renewed only by its holder: a decision whose
// claim ran out, and was taken by the next decision, leaves the new one be.
func TestClaimIsReleasedAndRenewedOnlyByItsHolder(t *testing.T) {
	t.Parallel()
	rdb := bottest.Redis(t)
	prefix := bottest.Prefix()
	s := newStore(t, rdb, prefix)
	ctx := context.Background()
	key := prefix + ":claim:{p_x}"
	if ok, err := s.Claim(ctx, "p_x", "c_1 approve:alice", time.Minute); err != nil || !ok {
		t.Fatalf("claim = %v, %v", ok, err)
	}
	if err := s.Release(ctx, "p_x", "c_2 cancel:bob"); !errors.Is(err, bot.ErrNotHolder) {
		t.Fatalf("release by a non-holder = %v, want ErrNotHolder", err)
	}
	if err := s.RenewClaim(ctx, "p_x", "c_2 cancel:bob", time.Hour); !errors.Is(err, bot.ErrNotHolder) {
		t.Fatalf("renew by a non-holder = %v, want ErrNotHolder", err)
	}
	if h, err := rdb.Get(ctx, key).Result(); err != nil || h != "c_1 approve:alice" {
		t.Fatalf("claim after a non-holder's release = %q, %v; want alice's", h, err)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl > time.Minute {
		t.Fatalf("a non-holder's renewal took: ttl %s", ttl)
	}
	if err := s.RenewClaim(ctx, "p_x", "c_1 approve:alice", time.Hour); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= time.Minute {
		t.Fatalf("renewed claim's ttl = %s, want about an hour", ttl)
	}

	// Alice's claim runs out while her decision works; bob takes it. Her
	// late release and renewal leave bob's claim as it is.
	if err := s.RenewClaim(ctx, "p_x", "c_1 approve:alice", 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if ok, err := s.Claim(ctx, "p_x", "c_2 cancel:bob", time.Minute); err != nil || !ok {
		t.Fatalf("bob's claim after alice's ran out = %v, %v", ok, err)
	}
	if err := s.Release(ctx, "p_x", "c_1 approve:alice"); !errors.Is(err, bot.ErrNotHolder) {
		t.Fatalf("alice's late release = %v, want ErrNotHolder", err)
	}
	if err := s.RenewClaim(ctx, "p_x", "c_1 approve:alice", time.Hour); !errors.Is(err, bot.ErrNotHolder) {
		t.Fatalf("alice's late renewal = %v, want ErrNotHolder", err)
	}
	if h, err := rdb.Get(ctx, key).Result(); err != nil || h != "c_2 cancel:bob" {
		t.Fatalf("claim = %q, %v; want bob's", h, err)
	}
	if err := s.Release(ctx, "p_x", "c_2 cancel:bob"); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatal("holder's release left the claim")
	}
}

func TestProposalsAndExpirySchedule(t *testing.T) {
	t.Parallel()
	s := newFreshStore(t)
	ctx := context.Background()
	now := time.Now()
	put := func(id string, state board.ProposalState, expires time.Time) {
		t.Helper()
		if err := s.PutProposal(ctx, board.Proposal{ID: board.ProposalID(id), State: state, Version: 1, ExpiresAt: expires}); err != nil {
			t.Fatal(err)
		}
	}
	put("p_due", board.ProposalPending, now.Add(-time.Second))
	put("p_later", board.ProposalPending, now.Add(time.Hour))
	put("p_done", board.ProposalPending, now.Add(-time.Second))
	put("p_done", board.ProposalApproved, now.Add(-time.Second)) // decided: off the schedule

	due, err := s.DueExpiries(ctx, now, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 1 || due[0] != "p_due" {
		t.Fatalf("due = %v, want [p_due]", due)
	}
	if err := s.RemoveExpiry(ctx, "p_due"); err != nil {
		t.Fatal(err)
	}
	if due, _ := s.DueExpiries(ctx, now, 10); len(due) != 0 {
		t.Fatalf("due after remove = %v", due)
	}
	p, err := s.Proposal(ctx, "p_done")
	if err != nil || p.State != board.ProposalApproved {
		t.Fatalf("p_done = %+v, %v", p, err)
	}
	if _, err := s.Proposal(ctx, "p_missing"); !errors.Is(err, bot.ErrNotFound) {
		t.Fatalf("missing proposal: err = %v, want ErrNotFound", err)
	}
}

func TestAdmitDedupesAndLimits(t *testing.T) {
	t.Parallel()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	s := newStore(t, rdb, prefix)
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	adm := func(id board.RequestID, user, dedupe string) board.AdmitResult {
		t.Helper()
		res, err := s.Admit(ctx, board.Admission{
			Record: board.RequestRecord{Request: board.Request{ID: id, User: user}, Status: board.RequestStatus{ID: id}}, DedupeKey: dedupe, DedupeTTL: time.Minute,
			UserKey: "user:" + user, UserLimit: board.RateLimit{N: 2, Per: time.Minute},
			ChannelKey: "channel:c", ChannelLimit: board.RateLimit{N: 4, Per: time.Minute}, ChannelNotices: 2, Now: now,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// On one server a request with a dedupe key is given the id the key
	// derives (its record is its mark); on a cluster it keeps its own.
	want := redisstore.AdmittedID(s, "r_1", "evt1")
	if res := adm("r_1", "alice", "evt1"); res.Outcome != board.AdmitNew || res.RequestID != want {
		t.Fatalf("first = %+v; want new, %s", res, want)
	}
	if rec, err := s.Request(ctx, want); err != nil || rec.Request.ID != want || rec.Status.ID != want || rec.Request.User != "alice" {
		t.Fatalf("the first request's record = %+v, %v", rec, err)
	}
	if res := adm("r_2", "bob", "evt1"); res.Outcome != board.AdmitDuplicate || res.RequestID != want {
		t.Fatalf("same dedupe key = %+v; want duplicate of %s", res, want)
	}
	if _, err := s.Request(ctx, "r_2"); !errors.Is(err, bot.ErrNotFound) {
		t.Fatalf("a duplicate stored a record: %v", err)
	}
	if rec, err := s.Request(ctx, want); err != nil || rec.Request.User != "alice" {
		t.Fatalf("the first request's record after its duplicate = %+v, %v; want alice's", rec.Request, err)
	}
	if res := adm("r_3", "alice", ""); res.Outcome != board.AdmitNew {
		t.Fatalf("second of two allowed = %+v", res)
	}
	// Alice is over her 2 per minute: told once, then not again.
	if res := adm("r_4", "alice", ""); res.Outcome != board.AdmitThrottled || res.Limit != "user" || !res.Notify {
		t.Fatalf("third = %+v; want throttled by user, notify", res)
	}
	if res := adm("r_5", "alice", ""); res.Outcome != board.AdmitThrottled || res.Notify {
		t.Fatalf("fourth = %+v; want throttled, no second notice", res)
	}
	// The channel fills up (4 per minute), then throttles everyone; only
	// two people per window are told.
	adm("r_6", "bob", "")
	adm("r_7", "bob", "")
	notified := 0
	for i, user := range []string{"carol", "dave", "erin", "frank"} {
		res := adm(board.RequestID(fmt.Sprint("r_c", i)), user, "")
		if res.Outcome != board.AdmitThrottled || res.Limit != "channel" {
			t.Fatalf("%s = %+v; want throttled by channel", user, res)
		}
		if res.Notify {
			notified++
		}
	}
	// Alice was told already (by the user limit) in this window.
	if notified != 1 {
		t.Fatalf("channel notices = %d; want the cap of 2 less alice's", notified)
	}
	// Refused by the channel, they were not counted in windows of their
	// own: a flood from many people leaves no key per person.
	for _, user := range []string{"carol", "dave", "erin", "frank"} {
		window := prefix + ":rate:{user:" + user + "}:" + fmt.Sprint(now.UnixMilli()/time.Minute.Milliseconds())
		if n, err := rdb.Exists(ctx, window).Result(); err != nil || n != 0 {
			t.Fatalf("%s's window is left behind: %d, %v", user, n, err)
		}
	}
	// A throttled request stored nothing and marked nothing: its dedupe key
	// is free for the platform's retry once the window has room.
	for _, id := range []board.RequestID{"r_4", "r_5", "r_c0", "r_c3"} {
		if _, err := s.Request(ctx, id); !errors.Is(err, bot.ErrNotFound) {
			t.Fatalf("throttled request %s stored a record: %v", id, err)
		}
	}
	// A throttled request's dedupe key is left free: the retry goes
	// through once there is room, in the next window, and is then a
	// request like any other.
	adm2 := func(id board.RequestID, at time.Time) board.AdmitResult {
		t.Helper()
		res, err := s.Admit(ctx, board.Admission{
			Record: board.RequestRecord{Request: board.Request{ID: id, User: "gina"}}, DedupeKey: "evt-retry", DedupeTTL: time.Hour,
			UserKey: "user:gina", UserLimit: board.RateLimit{N: 2, Per: time.Minute},
			ChannelKey: "channel:c", ChannelLimit: board.RateLimit{N: 4, Per: time.Minute}, ChannelNotices: 2, Now: at,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := adm2("r_g1", now); res.Outcome != board.AdmitThrottled || res.Limit != "channel" {
		t.Fatalf("gina in a full channel = %+v; want throttled by channel", res)
	}
	gina := adm2("r_g2", now.Add(time.Minute))
	if gina.Outcome != board.AdmitNew {
		t.Fatalf("gina's retry in the next window = %+v; want a new request", gina)
	}
	if res := adm2("r_g3", now.Add(time.Minute)); res.Outcome != board.AdmitDuplicate || res.RequestID != gina.RequestID {
		t.Fatalf("a second retry = %+v; want a duplicate of %s", res, gina.RequestID)
	}
	// Refused by the channel, gina was not counted against her own limit:
	// her two requests this window are her first two.
	for i := range 2 {
		res, err := s.Admit(ctx, board.Admission{
			Record:  board.RequestRecord{Request: board.Request{ID: board.RequestID(fmt.Sprint("r_gin", i)), User: "gina"}},
			UserKey: "user:gina", UserLimit: board.RateLimit{N: 2, Per: time.Minute},
			ChannelKey: "channel:d", ChannelLimit: board.RateLimit{N: 4, Per: time.Minute}, ChannelNotices: 2, Now: now,
		})
		if err != nil || res.Outcome != board.AdmitNew {
			t.Fatalf("gina's request %d in another channel = %+v, %v; want new", i, res, err)
		}
	}
	// Unlimited: no limits at all.
	for i := range 5 {
		res, err := s.Admit(ctx, board.Admission{Record: board.RequestRecord{Request: board.Request{ID: board.RequestID(fmt.Sprint("r_u", i))}}, UserKey: "u", ChannelKey: "c2", Now: now})
		if err != nil || res.Outcome != board.AdmitNew {
			t.Fatalf("unlimited admit %d = %+v, %v", i, res, err)
		}
	}
}

// One dedupe key admitted from many goroutines at once is one request.
func TestAdmitIsAtomic(t *testing.T) {
	t.Parallel()
	s := newFreshStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[board.RequestID]int{}
	news, winner := 0, -1
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Admit(ctx, board.Admission{Record: board.RequestRecord{Request: board.Request{ID: board.RequestID(fmt.Sprint("r_", i)), Text: fmt.Sprint("copy ", i)}},
				DedupeKey: "evt", DedupeTTL: time.Minute, UserKey: "u", ChannelKey: "c"})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids[res.RequestID]++
			if res.Outcome == board.AdmitNew {
				news, winner = news+1, i
			}
		}()
	}
	wg.Wait()
	if news != 1 || len(ids) != 1 {
		t.Fatalf("new = %d, ids = %v; want one request for all", news, ids)
	}
	// Only the admitted copy keeps its record, and no other wrote over it.
	records := 0
	for i := range 50 {
		if _, err := s.Request(ctx, board.RequestID(fmt.Sprint("r_", i))); err == nil {
			records++
		}
	}
	for id := range ids {
		rec, err := s.Request(ctx, id)
		if err != nil || rec.Request.Text != fmt.Sprint("copy ", winner) {
			t.Fatalf("record of %s = %q, %v; want copy %d's", id, rec.Request.Text, err, winner)
		}
		if id == redisstore.AdmittedID(s, "", "evt") {
			records++ // one server's: the id the key derives
		}
	}
	if records != 1 {
		t.Fatalf("%d request records for one admitted request", records)
	}
}

func TestClaimProposalLoadsUnderTheClaim(t *testing.T) {
	t.Parallel()
	s := newFreshStore(t)
	ctx := context.Background()
	if _, _, err := s.ClaimProposal(ctx, "p_none", "a", time.Minute); !errors.Is(err, bot.ErrNotFound) {
		t.Fatalf("claim of a missing proposal: %v; want not found", err)
	}
	if ok, _ := s.Claim(ctx, "p_none", "b", time.Minute); !ok {
		t.Fatal("a missing proposal was left claimed")
	}
	p := board.Proposal{ID: "p_1", State: board.ProposalPending, ExpiresAt: time.Now().Add(time.Hour)}
	if err := s.PutProposal(ctx, p); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.ClaimProposal(ctx, "p_1", "approve:a", time.Minute)
	if err != nil || !ok || got.ID != "p_1" || got.ClaimHolder != "" {
		t.Fatalf("claim = %+v, %v, %v", got, ok, err)
	}
	got, ok, err = s.ClaimProposal(ctx, "p_1", "approve:b", time.Minute)
	if err != nil || ok || got.ID != "p_1" || got.ClaimHolder != "approve:a" {
		t.Fatalf("second claim = %+v, %v, %v; want the proposal held by approve:a, not claimed", got, ok, err)
	}
}

func TestThreadHistoryIsBounded(t *testing.T) {
	t.Parallel()
	s := newFreshStore(t)
	ctx := context.Background()
	for i := range 25 {
		if err := s.AppendTurn(ctx, "console:general:t1", plan.Turn{Role: "user", User: "alice", Text: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	turns, err := s.Turns(ctx, "console:general:t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 20 || turns[0].Text != "m5" || turns[19].Text != "m24" {
		t.Fatalf("kept %+v; want the newest 20 (m5..m24)", turns)
	}
}

// A decision and the preview's message are written beside the proposal, so
// a writer holding an older copy of it (the worker that posted the preview,
// a decision loaded before the post returned) erases neither.
func TestDecisionAndPreviewSurviveAStaleCopy(t *testing.T) {
	t.Parallel()
	s := newFreshStore(t)
	ctx := context.Background()
	now := time.Now()
	stale := board.Proposal{ID: "p_d", Version: 1, RequestedBy: "alice", State: board.ProposalPending, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.PutProposal(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if missed, err := s.SetPreviewMessage(ctx, stale.ID, "ts-1", stale.ExpiresAt); err != nil || missed {
		t.Fatalf("set preview: missed %v, %v", missed, err)
	}
	decided := stale
	decided.State, decided.DecidedBy, decided.DecidedAt, decided.BoardID, decided.BoardURL = board.ProposalApproved, "bob", now, "b_1", "http://x/boards/b_1"
	if err := s.PutDecision(ctx, decided); err != nil {
		t.Fatal(err)
	}
	due, err := s.DueExpiries(ctx, now.Add(2*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range due {
		if id == stale.ID {
			t.Errorf("a decided proposal is still on the expiry schedule")
		}
	}
	if err := s.PutProposal(ctx, stale); err != nil { // a copy from before both
		t.Fatal(err)
	}
	check := func(how string, p board.Proposal) {
		t.Helper()
		if p.State != board.ProposalApproved || p.DecidedBy != "bob" || p.BoardID != "b_1" || p.BoardURL != decided.BoardURL || !p.DecidedAt.Equal(now) || p.Message != "ts-1" {
			t.Errorf("%s: %+v", how, p)
		}
	}
	p, err := s.Proposal(ctx, stale.ID)
	if err != nil {
		t.Fatal(err)
	}
	check("Proposal", p)
	p, claimed, err := s.ClaimProposal(ctx, stale.ID, "carol", time.Minute)
	if err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	check("ClaimProposal", p)
}

// Of a redraw that finds no message yet and the post recording it, exactly
// one side is told to redraw, in whichever order they come.
func TestPreviewRedrawnByExactlyOneSide(t *testing.T) {
	t.Parallel()
	s := newFreshStore(t)
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	// The redraw first: it finds nothing, so the post redraws.
	if ref, err := s.PreviewMessage(ctx, "p_a", exp); err != nil || ref != "" {
		t.Fatalf("before the post: %q, %v", ref, err)
	}
	if missed, err := s.SetPreviewMessage(ctx, "p_a", "ts-a", exp); err != nil || !missed {
		t.Fatalf("post after a missed redraw: missed %v, %v", missed, err)
	}
	if missed, err := s.SetPreviewMessage(ctx, "p_a", "ts-a", exp); err != nil || missed {
		t.Fatalf("the miss is told once: missed %v, %v", missed, err)
	}
	// The post first: the redraw finds the message, the post was told nothing.
	if missed, err := s.SetPreviewMessage(ctx, "p_b", "ts-b", exp); err != nil || missed {
		t.Fatalf("post: missed %v, %v", missed, err)
	}
	if ref, err := s.PreviewMessage(ctx, "p_b", exp); err != nil || ref != "ts-b" {
		t.Fatalf("after the post: %q, %v", ref, err)
	}
	// At once, many times: exactly one side redraws each time.
	for i := range 50 {
		id := board.ProposalID(fmt.Sprint("p_race", i))
		var redraws atomic.Int32
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if ref, err := s.PreviewMessage(ctx, id, exp); err != nil {
				t.Error(err)
			} else if ref != "" {
				redraws.Add(1)
			}
		}()
		go func() {
			defer wg.Done()
			if missed, err := s.SetPreviewMessage(ctx, id, "ts", exp); err != nil {
				t.Error(err)
			} else if missed {
				redraws.Add(1)
			}
		}()
		wg.Wait()
		if n := redraws.Load(); n != 1 {
			t.Fatalf("race %d: %d redraws, want 1", i, n)
		}
	}
}

// A request's record moves forward only: once answered (done or failed)
// a late write of a worker that took it again ("planning", or planning
// with its answer) leaves it answered, while an answer still replaces an
// answer and "planning" replaces "queued".
func TestRequestRecordNeverMovesBackFromItsAnswer(t *testing.T) {
	t.Parallel()
	s := newFreshStore(t)
	ctx := context.Background()
	rec := func(state board.RequestState, errText string) board.RequestRecord {
		return board.RequestRecord{Request: board.Request{ID: "r_forward", User: "ann", Text: "plan"}, Taken: state != board.RequestQueued,
			Status: board.RequestStatus{ID: "r_forward", State: state, Error: errText}}
	}
	state := func() board.RequestStatus {
		t.Helper()
		r, err := s.Request(ctx, "r_forward")
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	for _, step := range []struct {
		put  board.RequestRecord
		want board.RequestState
	}{
		{rec(board.RequestQueued, ""), board.RequestQueued},
		{rec(board.RequestPlanning, ""), board.RequestPlanning},
		{rec(board.RequestDone, ""), board.RequestDone},
		{rec(board.RequestPlanning, ""), board.RequestDone},
		{rec(board.RequestQueued, ""), board.RequestDone},
		{rec(board.RequestFailed, "given up"), board.RequestFailed},
		{rec(board.RequestPlanning, ""), board.RequestFailed},
	} {
		if err := s.PutRequest(ctx, step.put); err != nil {
			t.Fatal(err)
		}
		if got := state(); got.State != step.want {
			t.Fatalf("after putting %s: %s, want %s", step.put.Status.State, got.State, step.want)
		}
	}
}

// countedCalls counts the commands and pipelines a client sends.
type countedCalls struct{ n atomic.Int64 }

func (c *countedCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *countedCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *countedCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// Once a channel is refused for its limit with its notices used up for
// the window, a Slack event of that channel (a duplicate answered as a
// refusal is) is refused without a round trip to Redis until the window
// ends; a request whose duplicate must name its first request (the API)
// still asks Redis, and is answered as that duplicate; the next window
// takes requests again.
func TestAFloodedChannelIsRefusedWithoutRedis(t *testing.T) {
	t.Parallel()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	calls := &countedCalls{}
	rdb.AddHook(calls)
	s := newStore(t, rdb, prefix)
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 9, 0, 30, 0, time.UTC)
	adm := func(id, dedupe string, quiet bool) board.AdmitResult {
		t.Helper()
		res, err := s.Admit(ctx, board.Admission{
			Record: board.RequestRecord{Request: board.Request{ID: board.RequestID(id), User: "u_" + id}}, DedupeKey: dedupe, DedupeTTL: time.Hour,
			UserKey: "user:u_" + id, UserLimit: board.RateLimit{N: 10, Per: time.Minute},
			ChannelKey: "channel:flood", ChannelLimit: board.RateLimit{N: 2, Per: time.Minute}, ChannelNotices: 1,
			QuietDuplicates: quiet, Now: now,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	adm("r_1", "ev1", true)
	adm("r_2", "ev2", true)
	if res := adm("r_3", "ev3", true); res.Outcome != board.AdmitThrottled || !res.Notify {
		t.Fatalf("third = %+v; want throttled with the window's one notice", res)
	}
	if res := adm("r_4", "ev4", true); res.Outcome != board.AdmitThrottled || res.Notify {
		t.Fatalf("fourth = %+v; want throttled, notices used up", res)
	}
	before := calls.n.Load()
	for i := range 50 {
		if res := adm(fmt.Sprint("r_f", i), fmt.Sprint("evf", i), true); res.Outcome != board.AdmitThrottled || res.Limit != "channel" || res.Notify {
			t.Fatalf("flood %d = %+v; want throttled by channel, no notice", i, res)
		}
	}
	if n := calls.n.Load() - before; n != 0 {
		t.Errorf("50 events of a flooded channel sent Redis %d calls; want none", n)
	}
	first := redisstore.AdmittedID(s, "r_1", "ev1")
	if res := adm("r_api", "ev1", false); res.Outcome != board.AdmitDuplicate || res.RequestID != first {
		t.Errorf("an API retry in the flooded window = %+v; want the duplicate of %s", res, first)
	}
	now = now.Add(time.Minute)
	if res := adm("r_next", "evn", true); res.Outcome != board.AdmitNew {
		t.Errorf("the next window's first = %+v; want taken", res)
	}
}
