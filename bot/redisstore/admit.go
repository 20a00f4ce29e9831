package redisstore

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxAdmitBatch bounds how many admissions one pipeline carries.
const maxAdmitBatch = 64

// admitTimeout bounds one pipeline of admissions; a caller whose own
// context ends sooner stops waiting for it.
const admitTimeout = 5 * time.Second

// admitter pipelines concurrent admissions. While one pipeline is in
// flight the next admissions queue, and the next pipeline takes them all:
// under a burst Redis and this client pay a network round trip (two
// syscalls each side) once per pipeline instead of once per request, which
// is most of what taking a request in costs them. Each admission is still
// its own atomic script, answered in the order queued, and still one round
// trip for its caller; a lone admission goes out at once, with no waiting
// window. go-redis has no such batching of independent callers, so it is
// written here.
type admitter struct {
	rdb redis.UniversalClient
	// sha and src are admitScript's, held here so that a command can
	// point at them (see admitCall).
	sha, src string

	mu       sync.Mutex
	queue    []*admitCall
	flushing bool
}

func newAdmitter(rdb redis.UniversalClient) *admitter {
	return &admitter{rdb: rdb, sha: admitScript.Hash(), src: admitSource}
}

// call is a new admitCall to fill in.
func (a *admitter) call() *admitCall { return &admitCall{done: make(chan admitReply, 1)} }

// admitKeyCount and admitArgCount are how many KEYS and ARGV admitScript
// takes.
const (
	admitKeyCount = 7
	admitArgCount = 8
)

// numKeys is admitScript's key count as EVALSHA takes it; a variable, so
// commands can point at it.
var numKeys int64 = admitKeyCount

// admitCall is one admission: the request record and the script's keys
// and arguments. Its commands' arguments point into it (go-redis writes a
// *string or *int64 as the value it points at), because each string or
// number handed to go-redis as a value is boxed in an allocation of its
// own: some twenty per request, which the garbage collector then paid for
// on the ack path. Laid out here they cost the one allocation of the call.
type admitCall struct {
	record    []byte
	keys      [admitKeyCount]string
	id        string
	hasDedupe string
	nums      [6]int64 // dedupe TTL ms, user N, user window ms, channel N, channel window ms, notices
	ttl       int64    // the record's TTL in ms
	setArgs   [5]any
	evalArgs  [3 + admitKeyCount + admitArgCount]any
	done      chan admitReply // buffered: the flusher never blocks on it
}

type admitReply struct {
	res string
	err error
}

// run admits one request: its script's reply, or the error that stopped it.
func (a *admitter) run(ctx context.Context, c *admitCall) (string, error) {
	a.mu.Lock()
	a.queue = append(a.queue, c)
	if !a.flushing {
		a.flushing = true
		go a.flush()
	}
	a.mu.Unlock()
	select {
	case r := <-c.done:
		return r.res, r.err
	case <-ctx.Done():
		// The admission may still land: a retry of it is then answered
		// as a duplicate of it, as after any lost reply.
		return "", ctx.Err()
	}
}

// flush sends pipelines until the queue is empty.
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
	}
}

// commands lays out c's two commands: SET of the request record and
// EVALSHA of admitScript (EVAL with its source when eval is "eval").
func (a *admitter) commands(c *admitCall, eval string) (set, script []any) {
	c.setArgs = [5]any{"set", &c.keys[admitRecordKey], c.record, "px", &c.ttl}
	script = c.evalArgs[:0]
	if eval == "eval" {
		script = append(script, eval, &a.src)
	} else {
		script = append(script, eval, &a.sha)
	}
	script = append(script, &numKeys)
	for i := range c.keys {
		script = append(script, &c.keys[i])
	}
	script = append(script, &c.id, &c.hasDedupe)
	for i := range c.nums {
		script = append(script, &c.nums[i])
	}
	return c.setArgs[:], script
}

// send runs one pipeline of admissions and answers each caller. A Redis
// that lost its scripts (restarted) answers NOSCRIPT; those admissions are
// sent again with the script's source.
//
// Each admission is two commands: the request record is stored under its
// new, random id, then the script decides and deletes the record again
// unless the request was taken. The record stays out of the script because
// every byte passed to Lua is copied into a Lua string and collected
// again, which costs Redis more than a plain SET of the record. A script
// that fails leaves that record behind under an id nobody was given, until
// its TTL.
func (a *admitter) send(batch []*admitCall) {
	ctx, cancel := context.WithTimeout(context.Background(), admitTimeout)
	defer cancel()
	cmds := make([]*redis.Cmd, len(batch))
	_, err := a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range batch {
			set, script := a.commands(c, "evalsha")
			_ = p.Process(ctx, redis.NewStatusCmd(ctx, set...))
			cmds[i] = redis.NewCmd(ctx, script...)
			_ = p.Process(ctx, cmds[i])
		}
		return nil
	})
	for i, c := range batch {
		cmd := cmds[i]
		if cmd == nil {
			c.done <- admitReply{err: err}
			continue
		}
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			_, script := a.commands(c, "eval")
			cmd = redis.NewCmd(ctx, script...)
			_ = a.rdb.Process(ctx, cmd)
		}
		res, rerr := cmd.Text()
		c.done <- admitReply{res: res, err: rerr}
	}
}
