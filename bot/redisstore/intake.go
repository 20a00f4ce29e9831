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

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// PutRequest stores a request record.
func (s *InFlight) PutRequest(ctx context.Context, r board.RequestRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return wrap("put request", s.rdb.Set(ctx, s.key("request", string(r.Request.ID)), b, requestTTL).Err())
}

// Request returns a request record; board.ErrNotFound when there is none.
func (s *InFlight) Request(ctx context.Context, id board.RequestID) (board.RequestRecord, error) {
	b, err := s.rdb.Get(ctx, s.key("request", string(id))).Bytes()
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

// admitScript admits a request in one round trip: dedupe, both rate-limit
// windows and the stream entry, all or nothing. The request record was
// stored just before it in the same pipeline (see admitter.send); a request
// not taken has its record deleted again. A failure leaves nothing marked,
// so the platform's retry goes through.
//
// Each step makes as few Redis calls as a taken request needs (most are
// taken, and the ack waits for the script): a SET NX claims the dedupe
// key, a window counts first and refuses when that took it over its
// limit, and a refused request undoes what it claimed (its dedupe key,
// so the platform's retry goes through; its record; its count in the
// user window). The reply is one string: "new", "duplicate <first
// request id>" or "throttled <user|channel> <notify: 0|1>".
//
// Its KEYS and ARGV are listed at the top of admit.lua.
var admitScript = redis.NewScript(admitSource)

// admitSource is admitScript's Lua.
//
//go:embed admit.lua
var admitSource string

// admitRecordKey is the index of the request record among admitScript's
// KEYS.
const admitRecordKey = 3

// Admit takes a request in, or tells why not, in one Redis round trip:
// a request whose dedupe key was seen answers the first request's id; one
// over its user's or channel's rate limit is throttled (Notify says whether
// to tell the person: once per window each, and at most ChannelNotices
// people per channel window); otherwise its record is stored and it is
// queued on the request stream.
func (s *InFlight) Admit(ctx context.Context, a board.Admission) (board.AdmitResult, error) {
	c := s.admits.call()
	rec, err := json.Marshal(a.Record)
	if err != nil {
		return board.AdmitResult{}, err
	}
	now := a.Now
	if now.IsZero() {
		now = time.Now()
	}
	c.record, c.id, c.hasDedupe, c.ttl = rec, string(a.Record.Request.ID), "0", requestTTL.Milliseconds()
	if a.DedupeKey != "" {
		c.hasDedupe = "1"
	}
	s.admitKeys(c, a, now)
	c.nums = [6]int64{
		max(a.DedupeTTL, time.Millisecond).Milliseconds(),
		int64(max(a.UserLimit.N, 0)), max(a.UserLimit.Per, time.Millisecond).Milliseconds(),
		int64(max(a.ChannelLimit.N, 0)), max(a.ChannelLimit.Per, time.Millisecond).Milliseconds(), int64(a.ChannelNotices),
	}
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
		return board.AdmitResult{Outcome: board.AdmitThrottled, Limit: limit, Notify: notify == "1"}, nil
	}
	return board.AdmitResult{}, fmt.Errorf("admit request: unexpected reply %q", res)
}

// admitKeys names admitScript's KEYS for a, in the order it takes them,
// all in one string: seven allocations on the ack path become one.
func (s *InFlight) admitKeys(c *admitCall, a board.Admission, now time.Time) {
	dedupe := a.DedupeKey
	if dedupe == "" {
		dedupe = "none"
	}
	userWin, chanWin := windowIndex(now, a.UserLimit.Per), windowIndex(now, a.ChannelLimit.Per)
	noticeWin := userWin
	if a.ChannelLimit.Per > a.UserLimit.Per {
		noticeWin = chanWin
	}
	var b strings.Builder
	b.Grow(7*len(s.prefix) + 80 + len(dedupe) + 4*len(a.ChannelKey) + 2*len(a.UserKey) + len(c.id))
	var ends [admitKeyCount]int
	// Each key is its parts, maybe a window number, then end: KEYS order.
	n := 0
	key := func(parts ...string) {
		b.WriteString(s.prefix)
		for j, p := range parts {
			if j > 0 {
				b.WriteByte(':')
			}
			b.WriteString(p)
		}
	}
	num := func(w int64) {
		var scratch [20]byte
		b.WriteByte(':')
		b.Write(strconv.AppendInt(scratch[:0], w, 10))
	}
	end := func() { ends[n] = b.Len(); n++ }
	key("dedupe", dedupe)
	end()
	key("rate", a.UserKey)
	num(userWin)
	end()
	key("rate", a.ChannelKey)
	num(chanWin)
	end()
	key("request", c.id) // admitRecordKey
	end()
	key("requests")
	end()
	key("notice", a.UserKey, a.ChannelKey)
	num(noticeWin)
	end()
	key("notices", a.ChannelKey)
	num(chanWin)
	end()
	all, from := b.String(), 0
	for i, to := range ends {
		c.keys[i] = all[from:to]
		from = to
	}
}
