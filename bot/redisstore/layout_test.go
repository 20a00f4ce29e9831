package redisstore

import (
	"hash/fnv"
	"testing"
)

// A channel's shard is hash/fnv's FNV-1a, as before fnv32a: the shards of
// channels already queued must not move.
func TestFNV32aIsHashFNVs(t *testing.T) {
	for _, s := range []string{"", "a", "channel:slack:T1:C1", "channel:console:general", "channel:matrix:!room:example.org", "é\xff\x00"} {
		h := fnv.New32a()
		_, _ = h.Write([]byte(s))
		if got, want := fnv32a(s), h.Sum32(); got != want {
			t.Errorf("fnv32a(%q) = %d, want %d", s, got, want)
		}
	}
}
