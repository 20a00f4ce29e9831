package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
)

// Slot is Redis Cluster's: CRC16/XMODEM's check value, the hash tag
// rules of the cluster specification, and, on a cluster, CLUSTER KEYSLOT's
// answer for the keys the store writes.
func TestSlotIsRedisClusters(t *testing.T) {
	t.Parallel()
	if got := redisstore.Slot("123456789"); got != 0x31C3 {
		t.Fatalf("Slot(123456789) = %#x; want CRC16/XMODEM's check value 0x31c3", got)
	}
	same := [][2]string{
		{"{user1000}.following", "{user1000}.followers"},
		{"foo{bar}{zap}", "bar"},
		{"foo{{bar}}zap", "{bar"},
		{"bobnet:proposal:{p_1}", "bobnet:claim:{p_1}"},
	}
	for _, p := range same {
		if redisstore.Slot(p[0]) != redisstore.Slot(p[1]) {
			t.Errorf("Slot(%q) = %d, Slot(%q) = %d; want the same", p[0], redisstore.Slot(p[0]), p[1], redisstore.Slot(p[1]))
		}
	}
	if redisstore.Slot("foo{}{bar}") == redisstore.Slot("bar") {
		t.Error(`Slot("foo{}{bar}") used "bar"; an empty first tag hashes the whole key`)
	}
	if bottest.RedisMode(t) != redisstore.ModeCluster {
		return
	}
	rdb := bottest.Redis(t)
	for _, k := range []string{"bobnet:requests:{0}", "bobnet:requests:{15}", "bobnet:rate:{user:slack:U1}:42", "bobnet:dedupe:{3}:console:c:e", "plain"} {
		want, err := rdb.ClusterKeySlot(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := redisstore.Slot(k); int64(got) != want {
			t.Errorf("Slot(%q) = %d; CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
}

// slotWatch records, for every script and every MULTI a client sends, the
// keys it touches (as Redis's COMMAND GETKEYS names them).
type slotWatch struct {
	ask *redis.Client // a plain client to ask COMMAND GETKEYS

	mu      sync.Mutex
	scripts map[string][]string // the script (its SHA or source) → keys of one run
	txs     [][]string
	crossed []string
}

func (w *slotWatch) keys(ctx context.Context, cmd redis.Cmder) []string {
	args := append([]any{"command", "getkeys"}, cmd.Args()...)
	res, err := w.ask.Do(ctx, args...).StringSlice()
	if err != nil {
		return nil // a command without keys
	}
	return res
}

// check notes what touches keys of more than one slot.
func (w *slotWatch) check(what string, keys []string) {
	for _, k := range keys[1:] {
		if redisstore.Slot(k) != redisstore.Slot(keys[0]) {
			w.crossed = append(w.crossed, fmt.Sprintf("%s touches %q (slot %d) and %q (slot %d)", what, keys[0], redisstore.Slot(keys[0]), k, redisstore.Slot(k)))
		}
	}
}

func (w *slotWatch) script(ctx context.Context, cmd redis.Cmder) {
	name := strings.ToLower(cmd.Name())
	if name != "eval" && name != "evalsha" {
		return
	}
	keys := w.keys(ctx, cmd)
	script := fmt.Sprint(cmd.Args()[1])
	if p, ok := cmd.Args()[1].(*string); ok { // admission's EVALSHA names its hash by pointer
		script = *p
	}
	if len(script) > 60 {
		script = script[:60]
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scripts[script] = keys
	if len(keys) > 0 {
		w.check("script "+script, keys)
	}
}

func (w *slotWatch) DialHook(next redis.DialHook) redis.DialHook { return next }

func (w *slotWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		w.script(ctx, cmd)
		return next(ctx, cmd)
	}
}

func (w *slotWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var tx []string
		inTx := false
		for _, c := range cmds {
			w.script(ctx, c)
			switch strings.ToLower(c.Name()) {
			case "multi":
				inTx, tx = true, nil
			case "exec":
				w.mu.Lock()
				w.txs = append(w.txs, tx)
				if len(tx) > 0 {
					w.check("MULTI", tx)
				}
				w.mu.Unlock()
				inTx = false
			default:
				if inTx {
					tx = append(tx, w.keys(ctx, c)...)
				}
			}
		}
		return next(ctx, cmds)
	}
}

// Every Lua script and every MULTI/EXEC the store and the queue send
// touches keys of one hash slot, as a Redis Cluster requires: the calls
// that write every key family are made on a client that hands each
// script's and transaction's keys (named by Redis itself) to Slot.
func TestEveryScriptAndTransactionTouchesOneSlot(t *testing.T) {
	t.Parallel()
	u := os.Getenv("REDIS_URL")
	if u == "" {
		t.Skip("REDIS_URL is not set; `make test` starts a Redis and sets it")
	}
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	ask, rdb := redis.NewClient(opts), redis.NewClient(opts)
	t.Cleanup(func() { _, _ = ask.Close(), rdb.Close() })
	w := &slotWatch{ask: ask, scripts: map[string][]string{}}
	rdb.AddHook(w)
	// Sixteen shards, as on a cluster.
	prefix := bottest.Prefix()
	l := redisstore.Layout{Prefix: prefix, Streams: 16}
	s := redisstore.NewInFlightIn(rdb, l)
	redisstore.AdmitInSteps(s)
	exercise(t, s, redisstore.NewQueueIn(rdb, l))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.crossed {
		t.Error(c)
	}
	// Admission's channel step and its undo, the claim's release and
	// renewal, the preview's two sides and the record of stream shards.
	if len(w.scripts) < 7 {
		t.Errorf("saw %d scripts, want at least 7: %v", len(w.scripts), w.scripts)
	}
	if len(w.txs) < 2 {
		t.Errorf("saw %d transactions, want the claim's and the ack's", len(w.txs))
	}
}
