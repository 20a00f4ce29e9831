package redisstore

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// putRequestScript is PutRequest's.
var (
	//go:embed request_put.lua
	putRequestSource string
	putRequestScript = redis.NewScript(putRequestSource)
)

// PutRequest stores a request record; a record answered (done or failed)
// is never replaced by one that is not (request_put.lua says why).
func (s *InFlight) PutRequest(ctx context.Context, r board.RequestRecord) error {
	b, err := encodeRecord(r)
	if err != nil {
		return err
	}
	answered := "0"
	if r.Status.State == board.RequestDone || r.Status.State == board.RequestFailed {
		answered = "1"
	}
	err = putRequestScript.Run(ctx, s.rdb, []string{requestKey(s.prefix, r.Request.ID)}, b, requestTTL.Milliseconds(), answered).Err()
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	return wrap("put request", err)
}

// Request returns a request record; board.ErrNotFound when there is none.
func (s *InFlight) Request(ctx context.Context, id board.RequestID) (board.RequestRecord, error) {
	return requestOf(id, s.rdb.Get(ctx, requestKey(s.prefix, id)))
}

// requestOf is the record a GET of request id's key answered.
func requestOf(id board.RequestID, get *redis.StringCmd) (board.RequestRecord, error) {
	b, err := get.Bytes()
	if errors.Is(err, redis.Nil) {
		return board.RequestRecord{}, fmt.Errorf("request %s: %w", id, board.ErrNotFound)
	}
	if err != nil {
		return board.RequestRecord{}, wrap("get request", err)
	}
	var r board.RequestRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return board.RequestRecord{}, fmt.Errorf("request %s: %w", id, err)
	}
	return r, nil
}

// Admit takes a request in, or tells why not (the steps are admitter's,
// in admit.go): a request whose dedupe key was seen answers the first
// request's id (on one server a request with a dedupe key is given the
// id the key derives, board.RequestIDFor, so that its record is its mark;
// a request without an id is given a new one); one over its user's or
// channel's rate limit is throttled (Notify says whether to tell the
// person: once per window each, and at most ChannelNotices people per
// channel window); otherwise its record is stored and it is queued on
// its channel's stream shard. In cluster and
// sentinel modes a request no replica confirmed is refused with
// ErrNotReplicated.
func (s *InFlight) Admit(ctx context.Context, a board.Admission) (board.AdmitResult, error) {
	now := a.Now
	if now.IsZero() {
		now = time.Now()
	}
	flood := floodKey(a, now)
	if a.QuietDuplicates && s.floods.full(flood, now) {
		return board.AdmitResult{Outcome: board.AdmitThrottled, Limit: "channel"}, nil
	}
	switch {
	case a.DedupeKey != "" && s.admits.one:
		// The record is the dedupe mark (admit.go): a redelivery's is the
		// first's.
		id := board.RequestIDFor(a.DedupeKey)
		a.Record.Request.ID, a.Record.Status.ID = id, id
	case a.Record.Request.ID == "":
		id := board.NewRequestID()
		a.Record.Request.ID, a.Record.Status.ID = id, id
	}
	rec, err := encodeRecord(a.Record)
	if err != nil {
		return board.AdmitResult{}, err
	}
	c := s.admitCall(a, now, rec)
	res, err := s.admits.run(ctx, c)
	if err != nil {
		return board.AdmitResult{}, wrap("admit request", err)
	}
	outcome, detail, _ := strings.Cut(res, " ")
	switch outcome {
	case "new":
		return board.AdmitResult{Outcome: board.AdmitNew, RequestID: a.Record.Request.ID}, nil
	case "duplicate":
		return board.AdmitResult{Outcome: board.AdmitDuplicate, RequestID: board.RequestID(detail)}, nil
	case "throttled":
		limit, notify, _ := strings.Cut(detail, " ")
		notify, full := strings.CutSuffix(notify, " full")
		if full {
			s.floods.note(flood, windowEnd(now, a.ChannelLimit.Per))
		}
		return board.AdmitResult{Outcome: board.AdmitThrottled, RequestID: a.Record.Request.ID, Limit: limit, Notify: notify == "1"}, nil
	}
	return board.AdmitResult{}, fmt.Errorf("admit request: unexpected reply %q", res)
}

// admitCall lays out a's keys and arguments, with its record rec. The
// user's window is tagged by the user; everything else admission writes
// for the channel by the channel's stream shard, the stream's own tag.
func (s *InFlight) admitCall(a board.Admission, now time.Time, rec []byte) *admitCall {
	id := string(a.Record.Request.ID)
	userWin, chanWin := windowIndex(now, a.UserLimit.Per), windowIndex(now, a.ChannelLimit.Per)
	noticeWin := userWin
	if a.ChannelLimit.Per > a.UserLimit.Per {
		noticeWin = chanWin
	}
	shard := shardOf(a.ChannelKey, s.layout.Streams)
	tag := s.tags[shard]
	dedupe, hasDedupe := a.DedupeKey, "1"
	switch {
	case dedupe == "":
		dedupe, hasDedupe = "none", "0"
	case s.admits.one && now.UnixMilli() < s.admits.legacyUntil.Load():
		hasDedupe = "2" // and read a mark of before (Init)
	}
	userPer := max(a.UserLimit.Per, time.Millisecond).Milliseconds()
	chanPer := max(a.ChannelLimit.Per, time.Millisecond).Milliseconds()
	// The keys in one buffer: one allocation for all of them.
	var kb keyBuf
	kb.b = make([]byte, 0, 6*len(s.prefix)+2*len(a.UserKey)+3*len(a.ChannelKey)+len(dedupe)+len(id)+128)
	kb.key(s.prefix, "dedupe:", tag, ":", dedupe)
	kb.key(s.prefix, "rate:", tag, ":", a.ChannelKey, ":").num(chanWin)
	kb.key(s.prefix, "notice:", tag, ":", a.UserKey, ":", a.ChannelKey, ":").num(noticeWin)
	kb.key(s.prefix, "notices:", tag, ":", a.ChannelKey, ":").num(chanWin)
	kb.key(s.prefix, "request:", id)
	if a.UserLimit.N > 0 {
		kb.key(s.prefix, "rate:{", a.UserKey, "}:").num(userWin)
	} else {
		// Any name when users are not limited: the script leaves it
		// alone.
		kb.key(s.prefix, "rate:{}")
	}
	k := kb.keys()
	c := &admitCall{id: id, record: rec, recordKey: k[4], stream: s.streams[shard], hasDedupe: hasDedupe}
	var userN int64
	if a.UserLimit.N > 0 {
		c.userKey, userN = k[5], int64(a.UserLimit.N)
	}
	c.keys = [7]string{k[0], k[1], c.stream, k[2], k[3], k[5], c.recordKey}
	c.text = s.admits.texts.of(admitSettings{dedupeTTL: max(a.DedupeTTL, time.Millisecond).Milliseconds(), chanN: int64(max(a.ChannelLimit.N, 0)),
		chanPer: chanPer, userPer: userPer, notices: int64(a.ChannelNotices), userN: userN, recordTTL: requestTTL.Milliseconds()})
	if s.admits.one {
		// The user's window and the record.
		c.admitCommand(7)
	} else {
		c.admitCommand(5)
	}
	return c
}

// keyBuf writes keys one after another into one buffer; keys returns
// them as strings sharing one allocation.
type keyBuf struct {
	b    []byte
	ends [6]int
	n    int
}

// key appends a key of parts.
func (k *keyBuf) key(parts ...string) *keyBuf {
	for _, p := range parts {
		k.b = append(k.b, p...)
	}
	k.ends[k.n] = len(k.b)
	k.n++
	return k
}

// num appends n in decimal to the key just written.
func (k *keyBuf) num(n int64) {
	k.b = strconv.AppendInt(k.b, n, 10)
	k.ends[k.n-1] = len(k.b)
}

func (k *keyBuf) keys() [6]string {
	// The buffer is not written again: the keys are views of it rather
	// than a copy.
	all := unsafe.String(unsafe.SliceData(k.b), len(k.b))
	var out [6]string
	start := 0
	for i := range k.n {
		out[i], start = all[start:k.ends[i]], k.ends[i]
	}
	return out
}

// legacyWindow is how long after the first start of a version with
// derived request ids admission on one server still reads the dedupe
// marks versions before it wrote: a platform's retries (Slack's within
// minutes) and Matrix's replays after a restart come within it, and so
// does a rolling update's last old replica, unless the update takes
// longer.
const legacyWindow = time.Hour

// Init decides, once at start, how long admission reads the dedupe marks
// of versions before derived ids (one server only: a cluster keeps its
// marks). The first replica to start records when (derived-ids-since);
// on a Redis where no BobNet has a request stream yet, no older version
// left marks, and none are read.
func (s *InFlight) Init(ctx context.Context) error {
	if !s.admits.one {
		return nil
	}
	n, err := s.rdb.Exists(ctx, append([]string{legacyStream(s.prefix)}, s.streams...)...).Result()
	if err != nil {
		return wrap("init intake", err)
	}
	since := time.Now().UnixMilli()
	if n == 0 {
		since = 0
	}
	key := s.prefix + "derived-ids-since"
	if err := s.rdb.SetNX(ctx, key, since, 0).Err(); err != nil {
		return wrap("init intake", err)
	}
	first, err := s.rdb.Get(ctx, key).Int64()
	if err != nil {
		return wrap("init intake", err)
	}
	s.admits.legacyUntil.Store(first + legacyWindow.Milliseconds())
	return nil
}
