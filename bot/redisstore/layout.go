package redisstore

import (
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// Layout is where the store's keys live: under Prefix, with the request
// stream split into Streams shards, on a Redis reached in Mode.
//
// A Redis Cluster runs a script or a MULTI only when all its keys hash to
// one slot, so every key family carries a hash tag (the part in braces,
// which alone decides the slot): a proposal's keys the proposal id, a
// user's rate window the user, and everything admission writes for a
// channel — its dedupe marks, its rate window, its notices and its
// stream shard — the channel's shard. Keys.Tag says which for each.
type Layout struct {
	Prefix string
	// Streams is how many shards the request stream has; 0 is
	// DefaultStreams(Mode).
	Streams int
	// Mode is how Redis is reached: in cluster and sentinel modes an
	// admission waits for a replica to have it (see durable.go).
	Mode Mode
}

// modeOf is the mode a client was built for, as far as its type tells:
// cluster for a cluster client, single otherwise (a sentinel client is a
// *redis.Client too; NewInFlightIn and NewQueueIn are told).
func modeOf(rdb redis.UniversalClient) Mode {
	if _, ok := rdb.(*redis.ClusterClient); ok {
		return ModeCluster
	}
	return ModeSingle
}

// norm fills in a layout's defaults.
func (l Layout) norm() Layout {
	if l.Mode == "" {
		l.Mode = ModeSingle
	}
	if l.Streams <= 0 {
		l.Streams = DefaultStreams(l.Mode)
	}
	return l
}

// shardOf is the stream shard a channel's requests go to.
func shardOf(channelKey string, shards int) int {
	if shards <= 1 {
		return 0
	}
	return int(fnv32a(channelKey) % uint32(shards))
}

// fnv32a is hash/fnv's 32-bit FNV-1a of s, without its allocations:
// every admission hashes its channel.
func fnv32a(s string) uint32 {
	h := uint32(2166136261)
	for i := range len(s) {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// shardTag is the hash tag of shard n's keys: the stream and the keys
// admission writes for the channels of the shard.
func shardTag(n int) string { return "{" + strconv.Itoa(n) + "}" }

// streamKey is shard n's stream, under prefix (with its colon).
func streamKey(prefix string, n int) string { return prefix + "requests:" + shardTag(n) }

// requestKey is request id's record, under prefix (with its colon).
func requestKey(prefix string, id board.RequestID) string { return prefix + "request:" + string(id) }

// legacyStream is the one request stream of BobNet before shards; an
// upgraded replica drains it (legacy.go).
func legacyStream(prefix string) string { return prefix + "requests" }

// Slot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of its hash
// tag — the part between the first { and the next }, when not empty — or
// of the whole key, modulo 16384.
func Slot(key string) int {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				return int(crc16(key) % 16384)
			}
		}
		break
	}
	return int(crc16(key) % 16384)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0), Redis Cluster's.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
