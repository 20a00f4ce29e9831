package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Mode is how BobNet reaches Redis (BOBNET_REDIS_MODE).
type Mode string

// The modes: one server; a Redis Cluster; a master and its replicas
// watched by Redis Sentinel.
const (
	ModeSingle   Mode = "single"
	ModeCluster  Mode = "cluster"
	ModeSentinel Mode = "sentinel"
)

// ParseMode reads a mode; "" is single.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeSingle:
		return ModeSingle, nil
	case ModeCluster, ModeSentinel:
		return Mode(s), nil
	}
	return "", fmt.Errorf("%q is not single, cluster or sentinel", s)
}

// DefaultStreams is how many request stream shards a mode has unless told
// otherwise (BOBNET_REDIS_STREAMS): one on a single server or a sentinel
// set (one master takes every write anyway), 16 on a cluster, so that the
// streams spread over its masters.
func DefaultStreams(m Mode) int {
	if m == ModeCluster {
		return 16
	}
	return 1
}

// ClusterReload is how often a cluster client reloads its slot map even
// when no command failed: a master that died is no longer dialled once the
// map says its replica took over, within seconds rather than go-redis's
// default minute.
const ClusterReload = 3 * time.Second

// Options is a Redis client's settings, parsed from REDIS_URL for a mode.
type Options struct {
	mode     Mode
	single   *redis.Options
	cluster  *redis.ClusterOptions
	failover *redis.FailoverOptions
}

// ParseURL parses url in the form mode takes: a redis:// URL for single; go-redis's
// cluster form (redis://h1:p1?addr=h2:p2&addr=h3:p3) for cluster; its
// failover form (redis://sentinel1:26379?addr=sentinel2:26379&master_name=mymaster,
// the master's password as password=) for sentinel.
func ParseURL(mode Mode, url string) (Options, error) {
	o := Options{mode: mode}
	var err error
	switch mode {
	case ModeCluster:
		o.cluster, err = redis.ParseClusterURL(url)
	case ModeSentinel:
		o.failover, err = redis.ParseFailoverURL(url)
		if err == nil && o.failover.MasterName == "" {
			err = errors.New("a sentinel URL names its master: add master_name=NAME")
		}
	default:
		o.single, err = redis.ParseURL(url)
	}
	if err != nil {
		return Options{}, fmt.Errorf("not a %s Redis URL: %w", mode, err)
	}
	return o, nil
}

// Connect returns a client with o's settings and a pool per server of
// go-redis's default (10 per CPU) plus extra connections: the blocking
// request stream readers and the workers hold one each for as long as they
// wait, which must not starve the rest. A pool_size in the URL wins.
func Connect(o Options, extra int) redis.UniversalClient {
	pool := 10*runtime.GOMAXPROCS(0) + max(extra, 0)
	switch o.mode {
	case ModeCluster:
		opts := *o.cluster
		opts.PoolSize = cmp.Or(opts.PoolSize, pool)
		opts.ClusterStateReloadInterval = ClusterReload
		// The node clients too: admissions run their pipelines on a
		// node's client (durable.go), past the cluster client's hooks.
		var made atomic.Pointer[redis.ClusterClient]
		newNode := opts.NewClient
		opts.NewClient = func(o *redis.Options) *redis.Client {
			var n *redis.Client
			if newNode != nil {
				n = newNode(o)
			} else {
				n = redis.NewClient(o)
			}
			n.AddHook(reloadOnConnError{c: &made})
			return n
		}
		c := redis.NewClusterClient(&opts)
		made.Store(c)
		c.AddHook(reloadOnConnError{c: &made})
		return c
	case ModeSentinel:
		opts := *o.failover
		opts.PoolSize = cmp.Or(opts.PoolSize, pool)
		return redis.NewFailoverClient(&opts)
	default:
		opts := *o.single
		opts.PoolSize = cmp.Or(opts.PoolSize, pool)
		return redis.NewClient(&opts)
	}
}

// reloadOnConnError reloads a cluster client's slot map when a command
// fails on its connection: go-redis reloads on MOVED and READONLY, but a
// master that died answers neither, so without this the client keeps
// dialling it until the next periodic reload. On the node clients it
// reloads on MOVED and READONLY too (staleMap). Reloads are coalesced by
// go-redis (one at a time, 200 ms apart).
type reloadOnConnError struct {
	c *atomic.Pointer[redis.ClusterClient] // the cluster client, once made
}

func (h reloadOnConnError) reload(ctx context.Context) {
	if c := h.c.Load(); c != nil {
		c.ReloadState(ctx)
	}
}

func (h reloadOnConnError) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			h.reload(ctx)
		}
		return conn, err
	}
}

func (h reloadOnConnError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if staleMap(err) {
			h.reload(ctx)
		}
		return err
	}
}

func (h reloadOnConnError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		stale := staleMap(err)
		for _, c := range cmds {
			stale = stale || staleMap(c.Err())
		}
		if stale {
			h.reload(ctx)
		}
		return err
	}
}

// staleMap reports whether err says the slot map may be out of date: a
// lost or refused connection (a master that died), or a node's answer
// that the slot is elsewhere or it is no longer a master. The cluster
// client handles MOVED and READONLY on its own commands; the node
// clients, which admissions use directly, do not.
func staleMap(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	for _, p := range []string{"MOVED", "ASK", "READONLY", "CLUSTERDOWN", "TRYAGAIN"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
