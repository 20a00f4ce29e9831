package redisstore

import (
	_ "embed"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// This file lays out one admission's admit.lua command; admit.go sends
// admissions in batches.

var (
	// admitSource is admit.lua: step 2 on a cluster, the whole admission
	// on one server. Its settings are written into it (admitText).
	//go:embed admit.lua
	admitSource string
	// admitUndoSource is step 3's, sent as EVAL: it runs only for
	// refused requests.
	//go:embed admit_undo.lua
	admitUndoSource string
)

// admitSettings are what admit.lua is written with: the TTLs and windows
// in ms, the limits (0: none) and the notices per channel window.
type admitSettings struct {
	dedupeTTL, chanN, chanPer, userPer, notices, userN, recordTTL int64
}

// admitText is admit.lua written with one set of settings. A deployment
// admits with one (its configuration), so a store keeps a script or two;
// each call then carries 4 arguments instead of 11 (isolated, a script
// call cost Redis 7.1–7.7 µs with admit.lua's 7 keys and 11 arguments,
// against 3.7–4.9 µs with 1 key and 2).
type admitText struct {
	set    admitSettings
	script *redis.Script
	hash   string // for EVALSHA
	source string // for EVAL, after NOSCRIPT
}

func newAdmitText(set admitSettings) *admitText {
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	src := strings.NewReplacer("$dedupeTTL", n(set.dedupeTTL), "$chanN", n(set.chanN), "$chanPer", n(set.chanPer),
		"$userPer", n(set.userPer), "$notices", n(set.notices), "$userN", n(set.userN), "$recordTTL", n(set.recordTTL)).Replace(admitSource)
	sc := redis.NewScript(src)
	return &admitText{set: set, script: sc, hash: sc.Hash(), source: src}
}

// admitTexts keeps a store's admit.lua texts by their settings.
type admitTexts struct {
	last atomic.Pointer[admitText] // the one used last: no lock, no allocation
	mu   sync.Mutex
	all  map[admitSettings]*admitText
}

// of is admit.lua written with set.
func (t *admitTexts) of(set admitSettings) *admitText {
	if l := t.last.Load(); l != nil && l.set == set {
		return l
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	x, ok := t.all[set]
	if !ok {
		if t.all == nil {
			t.all = make(map[admitSettings]*admitText)
		}
		x = newAdmitText(set)
		t.all[set] = x
	}
	t.last.Store(x)
	return x
}

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
	// once. Its keys and arguments are held in keys, hasDedupe and text
	// and put in cmd as pointers to them, which go-redis writes as their
	// values: a string put in an interface is an allocation of its own,
	// a pointer is not.
	cmd       [admitCmdMax]any
	ncmd      int
	keys      [7]string
	hasDedupe string
	// text is admit.lua with the admission's settings, which a cluster's
	// step 1 also reads (the user's limit and window, the record's TTL).
	text *admitText

	user string // step 1's answer: "", "opened", "counted" or "over"
	res  string
	err  error
	done chan struct{}
}

// chanUserOver is where step 2's "user over" argument (ARGV[3]) is in a
// cluster's command.
const chanUserOver = 3 + 5 + 2

// admitCmdMax is the longest admit.lua command: EVALSHA, its hash, the
// key count, 7 keys, 4 arguments.
const admitCmdMax = 3 + 7 + 4

// admitCommand lays out c's admit.lua command: EVALSHA of c.text with nk
// of c.keys (5 for a cluster's step 2, 7 for one server's whole
// admission) and its arguments: the request id, has dedupe, user over
// (step 1's answer, set by send); one server: the record.
func (c *admitCall) admitCommand(nk int) {
	c.cmd[0], c.cmd[1], c.cmd[2] = "evalsha", &c.text.hash, nk
	n := 3
	for i := range nk {
		c.cmd[n] = &c.keys[i]
		n++
	}
	args := c.cmd[n:]
	args[0], args[1], args[2] = &c.id, &c.hasDedupe, "0"
	n += 3
	if nk == 7 {
		args[3] = c.record
		n++
	}
	c.ncmd = n
}
