package pending

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

	mu       sync.Mutex
	queue    []*admitCall
	flushing bool
}

type admitCall struct {
	record []byte // the request record, stored at keys[admitRecordKey]
	keys   []string
	args   []any
	done   chan admitReply // buffered: the flusher never blocks on it
}

type admitReply struct {
	res string
	err error
}

// run admits one request: its script's reply, or the error that stopped it.
func (a *admitter) run(ctx context.Context, record []byte, keys []string, args []any) (string, error) {
	c := &admitCall{record: record, keys: keys, args: args, done: make(chan admitReply, 1)}
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

// send runs one pipeline of admissions and answers each caller. A Redis
// that lost its scripts (restarted) answers NOSCRIPT; those admissions are
// sent again with the script's source.
//
// Each admission is two commands: the request record is stored under its
// new, random id, then the script decides and deletes the record again
// unless the request was taken. The record stays out of the script because
// every byte passed to Lua is copied into a Lua string and collected
// again: an 800-byte record made the script cost about 16 µs of Redis time
// instead of 11, where a plain SET of it costs 3. A script that fails
// leaves that record behind under an id nobody was given, until its TTL.
func (a *admitter) send(batch []*admitCall) {
	ctx, cancel := context.WithTimeout(context.Background(), admitTimeout)
	defer cancel()
	cmds := make([]*redis.Cmd, len(batch))
	_, err := a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range batch {
			p.Set(ctx, c.keys[admitRecordKey], c.record, requestTTL)
			cmds[i] = admitScript.EvalSha(ctx, p, c.keys, c.args...)
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
			cmd = admitScript.Run(ctx, a.rdb, c.keys, c.args...)
		}
		res, rerr := cmd.Text()
		c.done <- admitReply{res: res, err: rerr}
	}
}
