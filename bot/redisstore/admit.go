package redisstore

import (
	"context"
	_ "embed"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxAdmitBatch bounds how many admissions one round of pipelines carries.
const maxAdmitBatch = 64

// admitTimeout bounds the rounds of one batch of admissions; a caller
// whose own context ends sooner stops waiting for them.
const admitTimeout = 5 * time.Second

// admitter takes requests in. A Redis Cluster runs a script only on keys
// of one slot, and a request's keys belong to two families — its user's
// rate window (tagged by the user: the limit spans channels) and its
// channel's keys (tagged by the channel's stream shard) — so admission is
// two steps, each one script on one slot, and a third that only undoes:
//
//  1. the request record is stored (its own key) and the user's window
//     counts the request (admit_user.lua); on a cluster these run on
//     their two servers at once;
//  2. in the shard's slot, one script: a seen dedupe key answers
//     "duplicate"; a user over its limit (step 1's answer) or a channel
//     over its own is throttled, with the notices; otherwise the dedupe
//     mark is set and the stream entry added, together
//     (admit_channel.lua);
//  3. a request not taken has its record deleted and its count in its
//     user's window given back.
//
// Why this order is safe: the record is stored before the entry that
// names it, so a worker never reads an entry whose record is missing.
// The dedupe mark and the entry are written by one script in one slot,
// so neither exists without the other: a retry is never answered
// "duplicate" of a request that was never queued, and a failure before
// step 2 leaves nothing marked, so the platform's retry goes through. A
// failure after step 1 leaves the user's window one request higher than
// it should be (the limit errs on the strict side, for one window) and a
// record under an id nobody was given, until its TTL. Step 3 only gives
// back what steps 1 and 2 took for a refused request; when it fails the
// same holds.
//
// In cluster and sentinel modes each server's writes of steps 1 and 2
// end with WAIT 1: a request is acknowledged only once a replica has its
// record and its entry (durable.go).
//
// Concurrent admissions are batched: while one batch is in flight the
// next admissions queue, and the next batch takes them all, so under a
// burst Redis and this client pay each round trip once per batch instead
// of once per request. Each admission is still its own scripts, answered
// in the order queued; a lone admission goes out at once.
type admitter struct {
	rdb  redis.UniversalClient
	wait bool // WAIT for a replica (cluster and sentinel modes)

	mu       sync.Mutex
	queue    []*admitCall
	flushing bool
}

func newAdmitter(rdb redis.UniversalClient, wait bool) *admitter {
	return &admitter{rdb: rdb, wait: wait}
}

// admitUserScript and admitChannelScript are steps 1 and 2.
var (
	admitUserScript    = redis.NewScript(admitUserSource)
	admitChannelScript = redis.NewScript(admitChannelSource)
)

var (
	//go:embed admit_user.lua
	admitUserSource string
	//go:embed admit_channel.lua
	admitChannelSource string
	// admitUndoSource is step 3's, sent as EVAL: it runs only for
	// refused requests.
	//go:embed admit_undo.lua
	admitUndoSource string
)

// admitCall is one admission: its keys, its arguments, and the answers
// of its steps.
type admitCall struct {
	record    []byte
	id        string
	recordKey string
	userKey   string // "" when users are not limited
	// dedupe, channel window, stream shard, user notice, channel notice
	// count: admit_channel.lua's KEYS.
	chanKeys [5]string
	// request id, has dedupe, dedupe TTL ms, user over (step 1's), channel
	// N, channel window ms, user window ms, notices: its ARGV.
	chanArgs [8]any
	userArgs [2]any
	ttl      time.Duration // the record's

	user string // step 1's answer: "", "opened", "counted" or "over"
	res  string
	err  error
	done chan struct{}
}

// run admits one request: step 2's reply, or the error that stopped it.
func (a *admitter) run(ctx context.Context, c *admitCall) (string, error) {
	c.done = make(chan struct{})
	a.mu.Lock()
	a.queue = append(a.queue, c)
	if !a.flushing {
		a.flushing = true
		go a.flush()
	}
	a.mu.Unlock()
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		// The admission may still land: a retry of it is then answered
		// as a duplicate of it, as after any lost reply.
		return "", ctx.Err()
	}
}

// flush sends batches until the queue is empty.
func (a *admitter) flush() {
	for {
		a.mu.Lock()
		n := min(len(a.queue), maxAdmitBatch)
		if n == 0 {
			a.flushing = false
			a.mu.Unlock()
			return
		}
		batch := a.queue[:n:n]
		a.queue = a.queue[n:]
		if len(a.queue) == 0 {
			a.queue = nil // let the backing array go
		}
		a.mu.Unlock()
		a.send(batch)
		for _, c := range batch {
			close(c.done)
		}
	}
}

// send runs the steps of a batch of admissions and fills in each answer.
func (a *admitter) send(batch []*admitCall) {
	ctx, cancel := context.WithTimeout(context.Background(), admitTimeout)
	defer cancel()
	// Step 1: the records and the user windows.
	var one batches
	sets := make([]*redis.StatusCmd, len(batch))
	users := make([]*redis.Cmd, len(batch))
	for i, c := range batch {
		sets[i] = redis.NewStatusCmd(ctx, "set", c.recordKey, c.record, "px", c.ttl.Milliseconds())
		// The record must outlive its master once acknowledged: on a
		// cluster it is on a server of its own, which WAITs too.
		if c.err = one.add(ctx, a.rdb, c.recordKey, sets[i], a.wait && modeOf(a.rdb) == ModeCluster); c.err != nil {
			continue
		}
		if c.userKey != "" {
			users[i] = a.evalCmd(ctx, admitUserScript, []string{c.userKey}, c.userArgs[:])
			c.err = one.add(ctx, a.rdb, c.userKey, users[i], false)
		}
	}
	one.run(ctx)
	a.retryNoScript(ctx, admitUserScript, users, batch, func(c *admitCall) string { return c.userKey })
	for i, c := range batch {
		if c.err != nil {
			continue
		}
		if c.err = sets[i].Err(); c.err == nil && !one.replicatedFor(c.recordKey, sets[i]) {
			c.err = ErrNotReplicated
		}
		if c.err == nil && users[i] != nil {
			c.user, c.err = users[i].Text()
		}
	}
	// Step 2: the channel's slot, for those step 1 took.
	var two batches
	chans := make([]*redis.Cmd, len(batch))
	for i, c := range batch {
		if c.err != nil {
			continue
		}
		if c.user == "over" {
			c.chanArgs[3] = "1"
		}
		chans[i] = a.evalCmd(ctx, admitChannelScript, c.chanKeys[:], c.chanArgs[:])
		c.err = two.add(ctx, a.rdb, c.chanKeys[2], chans[i], a.wait)
	}
	two.run(ctx)
	a.retryNoScript(ctx, admitChannelScript, chans, batch, func(c *admitCall) string { return c.chanKeys[2] })
	for i, c := range batch {
		if c.err != nil || chans[i] == nil {
			continue
		}
		c.res, c.err = chans[i].Text()
		if c.err == nil && c.res == "new" && !two.replicatedFor(c.chanKeys[2], chans[i]) {
			c.res, c.err = "", ErrNotReplicated
		}
	}
	a.undo(ctx, batch)
}

// undo is step 3: a request step 2 did not take has its record deleted
// and, unless its user's own limit refused it, its count given back.
func (a *admitter) undo(ctx context.Context, batch []*admitCall) {
	var three batches
	for _, c := range batch {
		if c.err != nil || c.res == "new" || c.res == "" {
			continue // taken, or not known to be refused: nothing to undo
		}
		_ = three.add(ctx, a.rdb, c.recordKey, redis.NewIntCmd(ctx, "del", c.recordKey), false)
		if c.user == "opened" || c.user == "counted" || c.user == "over" && c.res != "" && c.res[0] == 'd' {
			_ = three.add(ctx, a.rdb, c.userKey, redis.NewCmd(ctx, "eval", admitUndoSource, 1, c.userKey), false)
		}
	}
	three.run(ctx)
}

// evalCmd is EVALSHA of script on keys and args.
func (a *admitter) evalCmd(ctx context.Context, script *redis.Script, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, "evalsha", script.Hash(), len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmdArgs = append(cmdArgs, args...)
	return redis.NewCmd(ctx, cmdArgs...)
}

// retryNoScript sends again, as EVAL with the script's source, the
// commands a Redis without the script (restarted, or a replica promoted)
// answered NOSCRIPT, and puts the new commands in their place. The WAIT
// of their batch is sent again with them.
func (a *admitter) retryNoScript(ctx context.Context, script *redis.Script, cmds []*redis.Cmd, batch []*admitCall, key func(*admitCall) string) {
	for i, cmd := range cmds {
		if cmd == nil || !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			continue
		}
		script.Load(ctx, a.rdb) // for the admissions after this one
		args := append([]any{"eval", scriptSource(script)}, cmd.Args()[2:]...)
		var again batches
		cmds[i] = redis.NewCmd(ctx, args...)
		if batch[i].err = again.add(ctx, a.rdb, key(batch[i]), cmds[i], a.wait); batch[i].err != nil {
			continue
		}
		again.run(ctx)
		if !again.replicatedFor(key(batch[i]), cmds[i]) && cmds[i].Err() == nil && cmds[i].Val() == "new" {
			batch[i].err = ErrNotReplicated
		}
	}
}

// scriptSource is the Lua of one of admission's scripts.
func scriptSource(s *redis.Script) string {
	if s == admitUserScript {
		return admitUserSource
	}
	return admitChannelSource
}

// replicatedFor reports whether the batch that carried cmd reached a
// replica.
func (bs batches) replicatedFor(_ string, cmd redis.Cmder) bool {
	for _, b := range bs {
		for _, c := range b.cmds {
			if c == cmd {
				return b.replicated()
			}
		}
	}
	return true
}
