package redisstore_test

import (
	"context"
	"os"
	"regexp"
	"strings"
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
	opts := *bottest.Redis(t).Options()
	opts.DB = keysTestDB
	rdb, prefix := redis.NewClient(&opts), bottest.Prefix()
	t.Cleanup(func() { _ = rdb.Close() })
	s := redisstore.NewInFlight(rdb, prefix)
	q := redisstore.NewQueue(rdb, prefix)
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
	if res := admit("r_1", "bob"); res.Outcome != board.AdmitNew {
		t.Fatalf("first admission = %+v", res)
	}
	if res := admit("r_2", "bob"); res.Outcome != board.AdmitThrottled || !res.Notify {
		t.Fatalf("second admission = %+v; want throttled and told", res)
	}
	must(s.PutRequest(ctx, board.RequestRecord{Request: board.Request{ID: "r_3", User: "bob"}}))
	_, err = s.SeenOnce(ctx, "slack:Ev1", time.Minute)
	must(err)
	must(s.Mark(ctx, "slack-thread:C1:1.2", time.Minute))
	_, err = s.Allow(ctx, "board-events:b_1", board.RateLimit{N: 5, Per: time.Minute})
	must(err)
	must(s.AddHomeViewer(ctx, "slack:T1", "U1", now))
	must(s.ShowingSet(ctx, "r_1", map[string]string{"status": "set"}, time.Minute))
	must(s.AppendTurn(ctx, "console:c:t", plan.Turn{Role: "user", User: "bob", Text: "plan"}))

	patterns := make([]*regexp.Regexp, len(redisstore.Keys))
	for i, k := range redisstore.Keys {
		patterns[i] = keyPattern(k.Pattern)
	}
	written := make([]bool, len(redisstore.Keys))
	keys, err := scanAll(ctx, rdb, prefix+":*")
	must(err)
	t.Cleanup(func() { rdb.Del(context.Background(), keys...) })
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
		if !written[i] {
			t.Errorf("redisstore.Keys lists %q, but no call wrote such a key", k.Pattern)
		}
	}
}

// scanAll returns every key matching match.
func scanAll(ctx context.Context, rdb redis.UniversalClient, match string) ([]string, error) {
	var out []string
	iter := rdb.Scan(ctx, 0, match, 100).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	return out, iter.Err()
}

// docTable renders redisstore.Keys as docs/architecture.md shows it.
func docTable() string {
	var b strings.Builder
	b.WriteString("| key | what | lifetime |\n|---|---|---|\n")
	for _, k := range redisstore.Keys {
		b.WriteString("| `" + k.Pattern + "` | " + k.Holds + " | " + k.Lifetime + " |\n")
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
