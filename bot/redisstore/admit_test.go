package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
)

// A burst of admissions, pipelined together, answers each caller with its
// own outcome and queues each new request once.
func TestBurstOfAdmissionsAnswersEachCaller(t *testing.T) {
	t.Parallel()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	s := redisstore.NewInFlightIn(rdb, bottest.Layout(t, prefix))
	q := redisstore.NewQueueIn(rdb, bottest.Layout(t, prefix))
	ctx := context.Background()
	const n = 300
	got := make([]board.AdmitResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Every third is a copy of the one before it; users 0-9 share a
			// limit of 20 per minute.
			key := fmt.Sprint("evt-", i-i%3/2)
			res, err := s.Admit(ctx, board.Admission{Record: board.RequestRecord{Request: board.Request{ID: board.RequestID(fmt.Sprint("r_", i))}},
				DedupeKey: key, DedupeTTL: time.Minute, UserKey: fmt.Sprint("u", i%10), UserLimit: board.RateLimit{N: 20, Per: time.Minute}, ChannelKey: "c"})
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = res
		})
	}
	wg.Wait()
	news, dups, throttled := 0, 0, 0
	for i, r := range got {
		switch r.Outcome {
		case board.AdmitNew:
			news++
			if r.RequestID != redisstore.AdmittedID(s, board.RequestID(fmt.Sprint("r_", i)), fmt.Sprint("evt-", i-i%3/2)) {
				t.Errorf("admission %d answered %s", i, r.RequestID)
			}
		case board.AdmitDuplicate:
			dups++
		case board.AdmitThrottled:
			throttled++
		}
	}
	if news > 200 || news+dups+throttled != n {
		t.Fatalf("new %d, duplicate %d, throttled %d of %d; at most 200 new (10 users x 20)", news, dups, throttled, n)
	}
	if l, err := q.Len(ctx); err != nil || l != int64(news) {
		t.Fatalf("stream has %d entries (%v), want one per new admission (%d)", l, err, news)
	}
}

// A Redis that lost its scripts (restarted, or SCRIPT FLUSH) still admits.
func TestAdmitAfterRedisLostItsScripts(t *testing.T) {
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	s := redisstore.NewInFlightIn(rdb, bottest.Layout(t, prefix))
	ctx := context.Background()
	admit := func(id string) board.AdmitResult {
		t.Helper()
		res, err := s.Admit(ctx, board.Admission{Record: board.RequestRecord{Request: board.Request{ID: board.RequestID(id)}}, UserKey: "u", ChannelKey: "c"})
		if err != nil {
			t.Fatalf("admit %s: %v", id, err)
		}
		return res
	}
	admit("r_1")
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if res := admit("r_2"); res.Outcome != board.AdmitNew || res.RequestID != "r_2" {
		t.Fatalf("after SCRIPT FLUSH: %+v", res)
	}
}

// admit.lua is written with each admission's settings: admissions of two
// configurations, in one burst and after Redis lost its scripts, are each
// held to their own limits.
func TestAdmissionsOfTwoSettingsKeepTheirOwnLimits(t *testing.T) {
	t.Parallel()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	s := redisstore.NewInFlightIn(rdb, bottest.Layout(t, prefix))
	ctx := context.Background()
	// User "strict" may make 2 requests a minute in channels of 3; "loose"
	// 5 in channels of 100.
	admit := func(user string, i int) (board.AdmitResult, error) {
		a := board.Admission{Record: board.RequestRecord{Request: board.Request{ID: board.RequestID(fmt.Sprint("r_", user, i))}},
			UserKey: user, ChannelKey: user + "-chan", ChannelNotices: 1}
		if user == "strict" {
			a.UserLimit, a.ChannelLimit = board.RateLimit{N: 2, Per: time.Minute}, board.RateLimit{N: 3, Per: time.Minute}
		} else {
			a.UserLimit, a.ChannelLimit = board.RateLimit{N: 5, Per: time.Minute}, board.RateLimit{N: 100, Per: time.Minute}
		}
		return s.Admit(ctx, a)
	}
	count := func(round int) map[string]int {
		t.Helper()
		var mu sync.Mutex
		taken := map[string]int{}
		var wg sync.WaitGroup
		for i := range 8 {
			for _, user := range []string{"strict", "loose"} {
				wg.Go(func() {
					res, err := admit(user, round*100+i)
					if err != nil {
						t.Error(err)
						return
					}
					if res.Outcome == board.AdmitNew {
						mu.Lock()
						taken[user]++
						mu.Unlock()
					} else if res.Outcome != board.AdmitThrottled || res.Limit != "user" {
						t.Errorf("%s: %+v, want new or throttled by the user's limit", user, res)
					}
				})
			}
		}
		wg.Wait()
		return taken
	}
	if got := count(0); got["strict"] != 2 || got["loose"] != 5 {
		t.Fatalf("taken %v of 8 each, want strict 2 and loose 5", got)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got := count(1); got["strict"] != 0 || got["loose"] != 0 {
		t.Fatalf("after SCRIPT FLUSH, in the same windows: taken %v, want none", got)
	}
	// The windows' lengths are each configuration's.
	for _, user := range []string{"strict", "loose"} {
		keys, err := rdb.Keys(ctx, prefix+"*rate:{"+user+"}:*").Result()
		if err != nil || len(keys) != 1 {
			t.Fatalf("%s's windows: %v (%v)", user, keys, err)
		}
		if ttl, err := rdb.PTTL(ctx, keys[0]).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
			t.Fatalf("%s's window expires in %v (%v), want within a minute", user, ttl, err)
		}
	}
}

// A user's window always has its length: the first request gives it, and
// a window left without one after its first request (the connection
// dropped between the count and its expiry) gets it from the second; the
// limit counts across them.
func TestUserWindowAlwaysExpires(t *testing.T) {
	t.Parallel()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	s := redisstore.NewInFlightIn(rdb, bottest.Layout(t, prefix))
	ctx := context.Background()
	admit := func(i int) board.AdmitResult {
		t.Helper()
		res, err := s.Admit(ctx, board.Admission{Record: board.RequestRecord{Request: board.Request{ID: board.RequestID(fmt.Sprint("r_", i))}},
			UserKey: "u-ttl", UserLimit: board.RateLimit{N: 3, Per: time.Minute}, ChannelKey: fmt.Sprint("c", i)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	window := func() string {
		t.Helper()
		keys, err := rdb.Keys(ctx, prefix+"*rate:{u-ttl}:*").Result()
		if err != nil || len(keys) != 1 {
			t.Fatalf("user windows = %v (%v), want one", keys, err)
		}
		return keys[0]
	}
	if res := admit(1); res.Outcome != board.AdmitNew {
		t.Fatalf("first request: %+v", res)
	}
	key := window()
	if ttl, err := rdb.PTTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("window %s expires in %v (%v), want within a minute", key, ttl, err)
	}
	if err := rdb.Persist(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if res := admit(2); res.Outcome != board.AdmitNew {
		t.Fatalf("second request: %+v", res)
	}
	if ttl, err := rdb.PTTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("window %s left without a length expires in %v (%v) after the next request, want within a minute", key, ttl, err)
	}
	admit(3)
	if res := admit(4); res.Outcome != board.AdmitThrottled || res.Limit != "user" {
		t.Fatalf("fourth request of a limit of 3: %+v, want throttled by the user's limit", res)
	}
}

// admitEvent admits a request id of an event (its dedupe key) in channel.
func admitEvent(t *testing.T, s *redisstore.InFlight, id board.RequestID, dedupe, channel string) board.AdmitResult {
	t.Helper()
	res, err := s.Admit(context.Background(), board.Admission{Record: board.RequestRecord{Request: board.Request{ID: id, Text: "plan"}},
		DedupeKey: dedupe, DedupeTTL: time.Hour, UserKey: "u", ChannelKey: channel})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A dedupe mark of a version before one server's records were their own
// marks (a store admitting in steps writes it as that version did) still
// answers for the request it marked: a retry that reaches an upgraded
// replica is a duplicate of the first, and stores nothing.
func TestAMarkOfBeforeStillAnswers(t *testing.T) {
	t.Parallel()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	ctx := context.Background()
	l := bottest.Layout(t, prefix)
	old, s := redisstore.NewInFlightIn(rdb, l), redisstore.NewInFlightIn(rdb, l)
	redisstore.AdmitInSteps(old)
	adm := func(s *redisstore.InFlight, id board.RequestID) board.AdmitResult {
		return admitEvent(t, s, id, "slack:T1:C1:slack-message:C1:1.2", "channel:slack:T1:C1")
	}
	if res := adm(old, "r_old"); res.Outcome != board.AdmitNew || res.RequestID != "r_old" {
		t.Fatalf("the first, before = %+v", res)
	}
	// The upgraded replica starts on a Redis the older version used.
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if res := adm(s, "r_retry"); res.Outcome != board.AdmitDuplicate || res.RequestID != "r_old" {
		t.Fatalf("its retry, after = %+v; want a duplicate of r_old", res)
	}
	for _, id := range []board.RequestID{"r_retry", board.RequestIDFor("slack:T1:C1:slack-message:C1:1.2")} {
		if _, err := s.Request(ctx, id); !errors.Is(err, board.ErrNotFound) {
			t.Errorf("the retry stored a record under %s: %v", id, err)
		}
	}
}

// On a Redis no BobNet had used (no request stream), Init records that no
// older version left marks, and admission reads none: a mark like theirs
// is not looked at. A later start reads the same record.
func TestInitOnANewRedisReadsNoMarksOfBefore(t *testing.T) {
	t.Parallel()
	rdb, prefix := bottest.Redis(t), bottest.Prefix()
	ctx := context.Background()
	l := bottest.Layout(t, prefix)
	s := redisstore.NewInFlightIn(rdb, l)
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	old := redisstore.NewInFlightIn(rdb, l)
	redisstore.AdmitInSteps(old)
	adm := func(s *redisstore.InFlight, id board.RequestID) board.AdmitResult {
		return admitEvent(t, s, id, "matrix:!r:$e", "channel:matrix:!r")
	}
	if res := adm(old, "r_old"); res.Outcome != board.AdmitNew {
		t.Fatalf("a mark's admission = %+v", res)
	}
	want := board.AdmitNew // one server: the mark is not read
	if bottest.RedisMode(t) == redisstore.ModeCluster {
		want = board.AdmitDuplicate // a cluster's marks are its own
	}
	if res := adm(s, "r_new"); res.Outcome != want {
		t.Fatalf("admission after Init on a new Redis = %+v; want %s", res, want)
	}
	// Streams exist now, but the first start's record stands.
	again := redisstore.NewInFlightIn(rdb, l)
	if err := again.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if res := adm(again, "r_again"); res.Outcome != board.AdmitDuplicate {
		t.Fatalf("the same event through a later start = %+v; want the duplicate of the one before", res)
	}
}
