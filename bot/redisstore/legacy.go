package redisstore

import (
	"context"
	_ "embed"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// Upgrades. BobNet before hash tags kept one request stream, `requests`,
// and a proposal's keys untagged (`proposal:<id>`, …). An upgraded
// replica drains the old stream (its reader is one more shard's, and
// Reclaim looks at it too) and reads a proposal kept under the old keys
// by moving them to the new ones, with their TTLs, the first time it is
// asked for it; so a proposal made before the upgrade can still be
// decided until it expires. Only a single Redis or a sentinel set can
// hold old keys: no BobNet ran on a cluster before.
//
// `streams` records the most shards any replica has used. A replica with
// fewer (BOBNET_REDIS_STREAMS lowered) drains the shards above its own:
// an older replica may still write them while a rolling update runs.

// streamsMaxScript raises `streams` to ARGV[1] and returns it.
var streamsMaxScript = redis.NewScript(streamsMaxSource)

//go:embed streams_max.lua
var streamsMaxSource string

// dropIfDrainedScript deletes a drained stream once it is empty with
// nothing pending in its group (ARGV[1]).
var dropIfDrainedScript = redis.NewScript(dropIfDrainedSource)

//go:embed drop_if_drained.lua
var dropIfDrainedSource string

// findDrains records this replica's shard count and notes the shards
// above it that some replica used.
func (q *Queue) findDrains(ctx context.Context) error {
	most, err := streamsMaxScript.Run(ctx, q.rdb, []string{q.prefix + "streams"}, q.layout.Streams).Int()
	if err != nil {
		return wrap("record stream shards", err)
	}
	var drains []int
	for n := q.layout.Streams; n < most; n++ {
		drains = append(drains, n)
	}
	q.mu.Lock()
	q.drains = drains
	q.mu.Unlock()
	return nil
}

// legacyFamilies are the proposal key families of before hash tags.
var legacyFamilies = []string{"proposal", "preview", "decision", "claim", "preview-missed", "reminded"}

// upgradeProposal moves a proposal's keys of before hash tags to their
// tagged names, keeping their TTLs (RENAMENX: a key already under its new
// name stays). It reports whether there was a proposal to move. On a
// cluster there is nothing to move.
func (s *InFlight) upgradeProposal(ctx context.Context, id board.ProposalID) (bool, error) {
	if s.layout.Mode == ModeCluster {
		return false, nil
	}
	n, err := s.rdb.Exists(ctx, s.key("proposal", string(id))).Result()
	if err != nil || n == 0 {
		return false, wrap("read old proposal", err)
	}
	cmds := make([]*redis.BoolCmd, len(legacyFamilies))
	_, _ = s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, f := range legacyFamilies {
			cmds[i] = pipe.RenameNX(ctx, s.key(f, string(id)), s.pkey(f, id))
		}
		return nil
	})
	for _, c := range cmds {
		// A family the proposal never had is no such key.
		if err := c.Err(); err != nil && !strings.Contains(err.Error(), "no such key") {
			return false, wrap("move old proposal", err)
		}
	}
	return true, nil
}
