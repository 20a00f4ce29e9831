package redisstore_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/plan"
)

// keyPattern turns a Keys pattern into a regexp for a whole key after the
// prefix: each <name> matches one or more characters.
func keyPattern(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for rest := pattern; rest != ""; {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(rest))
			break
		}
		j := strings.IndexByte(rest[i:], '>')
		b.WriteString(regexp.QuoteMeta(rest[:i]) + ".+")
		rest = rest[i+j+1:]
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// keysTestDB is the Redis database TestKeysTableCoversEveryKeyWritten
// writes in; no other test uses it.
const keysTestDB = 7

// Every key the store and the queue write matches a pattern of Keys, and
// every pattern of Keys is written by some call: the table is neither
// short of a key nor holding one the code no longer writes.
func TestKeysTableCoversEveryKeyWritten(t *testing.T) {
	t.Parallel()
	// A database of its own: the SCAN below walks the whole keyspace,
	// which the other tests (and benchmarks) sharing REDIS_URL fill.
	rdb, prefix := keysTestRedis(t), bottest.Prefix()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	exercise(t, newStore(t, rdb, prefix), redisstore.NewQueueIn(rdb, bottest.Layout(t, prefix)))

	patterns := make([]*regexp.Regexp, len(redisstore.Keys))
	for i, k := range redisstore.Keys {
		patterns[i] = keyPattern(k.Pattern)
	}
	written := make([]bool, len(redisstore.Keys))
	keys, err := scanAll(ctx, rdb, prefix+":*")
	must(err)
	t.Cleanup(func() {
		for _, k := range keys {
			rdb.Del(context.Background(), k)
		}
	})
	for _, key := range keys {
		rest := strings.TrimPrefix(key, prefix+":")
		found := false
		for i, re := range patterns {
			if re.MatchString(rest) {
				written[i], found = true, true
			}
		}
		if !found {
			t.Errorf("key %q matches no pattern of redisstore.Keys", rest)
		}
	}
	for i, k := range redisstore.Keys {
		// The stream of BobNet before shards is only drained now; dedupe
		// marks are a cluster's (one server's records are their own), and
		// derived-ids-since one server's.
		cluster := bottest.RedisMode(t) == redisstore.ModeCluster
		if !written[i] && k.Pattern != "requests" && (k.Pattern != "dedupe:{<shard>}:<channel>:<key>" || cluster) && (k.Pattern != "derived-ids-since" || !cluster) {
			t.Errorf("redisstore.Keys lists %q, but no call wrote such a key", k.Pattern)
		}
	}
}

// keysTestRedis is a single Redis's database keysTestDB, or the cluster
// or sentinel set of the tests' mode (one database each: the SCAN walks
// all of it).
func keysTestRedis(t *testing.T) redis.UniversalClient {
	t.Helper()
	if bottest.RedisMode(t) != redisstore.ModeSingle {
		return bottest.Redis(t)
	}
	opts, err := redis.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil || os.Getenv("REDIS_URL") == "" {
		t.Skip("REDIS_URL is not set; `make test` starts a Redis and sets it")
	}
	opts.DB = keysTestDB
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// scanAll returns every key matching match, on every master of a cluster.
func scanAll(ctx context.Context, rdb redis.UniversalClient, match string) ([]string, error) {
	scan := func(c redis.Cmdable) ([]string, error) {
		var out []string
		iter := c.Scan(ctx, 0, match, 100).Iterator()
		for iter.Next(ctx) {
			out = append(out, iter.Val())
		}
		return out, iter.Err()
	}
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return scan(rdb)
	}
	var mu sync.Mutex
	var all []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		keys, err := scan(c)
		mu.Lock()
		all = append(all, keys...)
		mu.Unlock()
		return err
	})
	return all, err
}

// docTable renders redisstore.Keys as docs/architecture.md shows it.
func docTable() string {
	var b strings.Builder
	b.WriteString("| key | hash tag | what | lifetime |\n|---|---|---|---|\n")
	for _, k := range redisstore.Keys {
		b.WriteString("| `" + k.Pattern + "` | " + k.Tag + " | " + k.Holds + " | " + k.Lifetime + " |\n")
	}
	return b.String()
}

// docs/architecture.md's Redis table is redisstore.Keys rendered: a key added
// to, changed in or removed from the code and not the docs fails here, and
// the failure prints the table to paste.
func TestArchitectureDocListsTheKeysTable(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	const heading = "## What Redis holds\n"
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("docs/architecture.md has no %q section", strings.TrimSpace(heading))
	}
	var table strings.Builder
	inTable := false
	for _, line := range strings.SplitAfter(doc[i+len(heading):], "\n") {
		if strings.HasPrefix(line, "|") {
			inTable = true
			table.WriteString(line)
			continue
		}
		if inTable || strings.HasPrefix(line, "## ") {
			break
		}
	}
	if want := docTable(); table.String() != want {
		t.Errorf("docs/architecture.md's Redis table is not redisstore.Keys; replace it with:\n\n%s", want)
	}
}

// exercise makes every call of the store and the queue that writes a key:
// every key family is written, every script and transaction run.
func exercise(t *testing.T, s *redisstore.InFlight, q *redisstore.Queue) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p := board.Proposal{ID: "p_keys", State: board.ProposalPending, Version: 1, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	must(s.PutProposal(ctx, p))
	_, err := s.PreviewMessage(ctx, p.ID, p.ExpiresAt) // before the post: marks the miss
	must(err)
	_, err = s.SetPreviewMessage(ctx, "p_other", "m1", p.ExpiresAt)
	must(err)
	_, err = s.MarkReminded(ctx, p.ID, time.Hour)
	must(err)
	_, err = s.Claim(ctx, p.ID, "alice", time.Minute)
	must(err)
	decided := p
	decided.ID, decided.State, decided.DecidedBy = "p_decided", board.ProposalApproved, "alice"
	must(s.PutDecision(ctx, decided))

	must(s.Init(ctx))
	must(q.Init(ctx))
	admit := func(id board.RequestID, user string) board.AdmitResult {
		t.Helper()
		res, err := s.Admit(ctx, board.Admission{
			Record:    board.RequestRecord{Request: board.Request{ID: id, User: user, Text: "plan"}},
			DedupeKey: "console:c:" + string(id), DedupeTTL: time.Minute,
			UserKey: "user:console:" + user, UserLimit: board.RateLimit{N: 1, Per: time.Minute},
			ChannelKey: "channel:console:c", ChannelLimit: board.RateLimit{N: 5, Per: time.Minute}, ChannelNotices: 2, Now: now,
		})
		must(err)
		return res
	}
	first := admit("r_1", "bob")
	if first.Outcome != board.AdmitNew {
		t.Fatalf("first admission = %+v", first)
	}
	if res := admit("r_2", "bob"); res.Outcome != board.AdmitThrottled || !res.Notify {
		t.Fatalf("second admission = %+v; want throttled and told", res)
	}
	dup, err := s.Admit(ctx, board.Admission{
		Record:    board.RequestRecord{Request: board.Request{ID: "r_dup", User: "carl", Text: "plan"}},
		DedupeKey: "console:c:r_1", DedupeTTL: time.Minute,
		UserKey: "user:console:carl", UserLimit: board.RateLimit{N: 1, Per: time.Minute},
		ChannelKey: "channel:console:c", ChannelLimit: board.RateLimit{N: 5, Per: time.Minute}, Now: now,
	})
	if must(err); dup.Outcome != board.AdmitDuplicate || dup.RequestID != first.RequestID {
		t.Fatalf("a copy of %s = %+v; want a duplicate of it", first.RequestID, dup)
	}
	must(s.PutRequest(ctx, board.RequestRecord{Request: board.Request{ID: "r_3", User: "bob"}}))
	_, err = s.SeenOnce(ctx, "slack:Ev1", time.Minute)
	must(err)
	must(s.Mark(ctx, "slack-thread:C1:1.2", time.Minute))
	_, err = s.Allow(ctx, "board-events:b_1", board.RateLimit{N: 5, Per: time.Minute})
	must(err)
	must(s.AddHomeViewer(ctx, "slack:T1", "U1", now))
	must(s.ShowingSet(ctx, "r_1", map[string]string{"status": "set"}, time.Minute))
	must(s.AddDue(ctx, "slack-sweeps", "x", now))
	_, err = s.HoldStream(ctx, board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: "T1/C1"}, ID: "1.2"}, "r_1", time.Minute)
	must(err)
	must(s.AppendTurn(ctx, "console:c:t", plan.Turn{Role: "user", User: "bob", Text: "plan"}))
	_, err = s.ClaimDraftMessage(ctx, "r_1", "m_draft")
	must(err)
	_, err = s.ClaimRunProgressMessage(ctx, "u_1", "m_run")
	must(err)

	// The queue's own calls: read, renew, reclaim and acknowledge.
	got, err := q.Read(ctx, "w", time.Second)
	must(err)
	if len(got) != 1 {
		t.Fatalf("read = %+v; want the one request queued", got)
	}
	must(q.Renew(ctx, "w", []string{got[0].MessageID}))
	_, err = q.Reclaim(ctx, "w2", time.Hour)
	must(err)
	must(q.Ack(ctx, got[0].MessageID))
	_, _, err = s.ClaimProposal(ctx, p.ID, "carol", time.Minute) // alice holds it
	must(err)
	must(s.RenewClaim(ctx, p.ID, "alice", time.Minute))
	must(s.Release(ctx, p.ID, "alice"))
	_, err = s.Claim(ctx, p.ID, "alice", time.Minute)
	must(err)
	_, err = s.PendingProposals(ctx, now, 10)
	must(err)
}
