package redisstore

import (
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"
)

// This file lays out one admission's admit.lua command; admit.go sends
// admissions in batches.

// admitScript is step 2 on a cluster, the whole admission on one server.
var admitScript = redis.NewScript(admitSource)

var (
	//go:embed admit.lua
	admitSource string
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
	// stream is the channel's stream shard: step 2 goes to its server.
	stream string
	// cmd[:ncmd] is admit.lua's whole command (admitCommand), laid out
	// once. Its keys and arguments are held in keys, hasDedupe and nums
	// and put in cmd as pointers to them, which go-redis writes as their
	// values: a string or an int64 (past 255) put in an interface is an
	// allocation of its own, a pointer is not.
	cmd       [admitCmdMax]any
	ncmd      int
	keys      [7]string
	hasDedupe string
	nums      [7]int64
	userLimit int64         // requests a user's window allows
	userPer   int64         // the window, ms
	ttl       time.Duration // the record's

	user string // step 1's answer: "", "opened", "counted" or "over"
	res  string
	err  error
	done chan struct{}
}

// chanUserOver is where step 2's "user over" argument (ARGV[4]) is in a
// cluster's command.
const chanUserOver = 3 + 5 + 3

// admitCmdMax is the longest admit.lua command: EVALSHA, its hash, the
// key count, 7 keys, 11 arguments.
const admitCmdMax = 3 + 7 + 11

// admitHash is admit.lua's SHA1, for EVALSHA.
var admitHash = admitScript.Hash()

// admitCommand lays out c's admit.lua command: EVALSHA with nk of c.keys
// (5 for a cluster's step 2, 7 for one server's whole admission) and its
// arguments (8 and 11).
func (c *admitCall) admitCommand(nk int) {
	c.cmd[0], c.cmd[1], c.cmd[2] = "evalsha", &admitHash, nk
	n := 3
	for i := range nk {
		c.cmd[n] = &c.keys[i]
		n++
	}
	// ARGV: the request id, has dedupe, dedupe TTL, user over (step 1's
	// answer, set by send), channel N, channel window, user window,
	// notices per channel window; one server: user N, the record, its
	// TTL.
	args := c.cmd[n:]
	args[0], args[1], args[2], args[3] = &c.id, &c.hasDedupe, &c.nums[0], "0"
	args[4], args[5], args[6], args[7] = &c.nums[1], &c.nums[2], &c.nums[3], &c.nums[4]
	n += 8
	if nk == 7 {
		args[8], args[9], args[10] = &c.nums[5], c.record, &c.nums[6]
		n += 3
	}
	c.ncmd = n
}
