package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// replicaWait bounds how long an admission waits for a replica to confirm
// it (WAIT 1 replicaWait) in cluster and sentinel modes.
const replicaWait = time.Second

// ErrNotReplicated is an admission no replica confirmed within replicaWait:
// the request is refused as unavailable (503 with Retry-After), since its
// master alone has it and would lose it with itself.
var ErrNotReplicated = fmt.Errorf("%w: no Redis replica confirmed the request within %s", board.ErrUnavailable, replicaWait)

// durableIn reports whether admissions wait for a replica in mode m: a
// cluster's and a sentinel set's masters replicate asynchronously, so a
// request acknowledged before a replica has it is lost when its master
// dies; a single Redis has no replica to wait for.
func durableIn(m Mode) bool { return m == ModeCluster || m == ModeSentinel }

// node is one server's client: a pipeline on it runs on one connection,
// which WAIT needs (it waits for that connection's writes).
type node interface {
	Pipeline() redis.Pipeliner
}

// nodeOf is the client of the master holding key: the cluster node for a
// cluster, the client itself otherwise.
func nodeOf(ctx context.Context, rdb redis.UniversalClient, key string) (node, error) {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		c, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return rdb, nil
}

// nodeBatch is the commands of one round for one server, and the WAIT
// that ends them when they must reach a replica.
type nodeBatch struct {
	n    node
	cmds []redis.Cmder
	wait bool
	// replicas is WAIT's answer (nil without a WAIT); err is the
	// pipeline's.
	replicas *redis.IntCmd
	err      error
}

// batches groups commands by the server they go to, in their order.
type batches []*nodeBatch

// add puts cmd (whose key is key) in its server's batch; wait asks that
// batch to end with WAIT.
func (bs *batches) add(ctx context.Context, rdb redis.UniversalClient, key string, cmd redis.Cmder, wait bool) error {
	n, err := nodeOf(ctx, rdb, key)
	if err != nil {
		return err
	}
	for _, b := range *bs {
		if b.n == n {
			b.cmds = append(b.cmds, cmd)
			b.wait = b.wait || wait
			return nil
		}
	}
	*bs = append(*bs, &nodeBatch{n: n, cmds: []redis.Cmder{cmd}, wait: wait})
	return nil
}

// run sends every batch as one pipeline on its server, all at once, and
// waits for them.
func (bs batches) run(ctx context.Context) {
	if len(bs) == 0 {
		return
	}
	// The last batch runs on this goroutine: one server (a single Redis)
	// needs no goroutine at all, several need one fewer.
	var wg sync.WaitGroup
	for _, b := range bs[:len(bs)-1] {
		wg.Go(func() { b.exec(ctx) })
	}
	bs[len(bs)-1].exec(ctx)
	wg.Wait()
}

func (b *nodeBatch) exec(ctx context.Context) {
	p := b.n.Pipeline()
	for _, c := range b.cmds {
		_ = p.Process(ctx, c)
	}
	if b.wait {
		b.replicas = redis.NewIntCmd(ctx, "wait", 1, replicaWait.Milliseconds())
		_ = p.Process(ctx, b.replicas)
	}
	_, err := p.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		b.err = err
	}
}

// replicated reports whether the batch's writes reached a replica: true
// when it did not wait.
func (b *nodeBatch) replicated() bool {
	return b.replicas == nil || b.replicas.Err() == nil && b.replicas.Val() >= 1
}
