package pending

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/bot"
)

// PutRequest stores a request record.
func (s *Store) PutRequest(ctx context.Context, r bot.RequestRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return wrap("put request", s.rdb.Set(ctx, s.key("request", string(r.Request.ID)), b, requestTTL).Err())
}

// Request returns a request record; bot.ErrNotFound when there is none.
func (s *Store) Request(ctx context.Context, id bot.RequestID) (bot.RequestRecord, error) {
	b, err := s.rdb.Get(ctx, s.key("request", string(id))).Bytes()
	if errors.Is(err, redis.Nil) {
		return bot.RequestRecord{}, fmt.Errorf("request %s: %w", id, bot.ErrNotFound)
	}
	if err != nil {
		return bot.RequestRecord{}, wrap("get request", err)
	}
	var r bot.RequestRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return bot.RequestRecord{}, fmt.Errorf("request %s: %w", id, err)
	}
	return r, nil
}

// admitScript admits a request in one round trip: dedupe, both rate-limit
// windows and the stream entry, all or nothing. The request record was
// stored just before it in the same pipeline (see admitter.send); a request
// not taken has its record deleted again. A failure leaves nothing marked,
// so the platform's retry goes through.
//
// Each step is written to cost the fewest Redis calls for a request that
// is taken, which is most of them: every call a script makes costs Redis
// about as much as a command sent on its own, and the ack path waits for
// the script. So the dedupe key is claimed with one SET NX rather than a
// GET and a SET, and a window counts with one call in its usual case
// rather than a GET to check and a SET NX or INCR to count: a request
// counts first and is refused when that took the window over its limit.
// A refused request then undoes what it claimed: its dedupe key (the
// platform's retry must go through once there is room), its record, and
// its count in the user window when the channel's refused it. The reply
// is one string, not a table, for the same reason: "new", "duplicate
// <first request id>" or "throttled <user|channel> <notify: 0|1>".
//
// KEYS: 1 dedupe, 2 user window, 3 channel window, 4 request record,
// 5 stream, 6 user notice, 7 channel notice count.
// ARGV: 1 request id, 2 has dedupe (0/1), 3 dedupe TTL ms, 4 user N
// (0: no limit), 5 user window ms, 6 channel N (0: no limit), 7 channel
// window ms, 8 notices per channel window.
var admitScript = redis.NewScript(admitSource)

// admitSource is admitScript's Lua.
const admitSource = `
if ARGV[2] == '1' and not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[3]) then
  -- Time stands still inside a script: the key SET NX found is there.
  redis.call('DEL', KEYS[4])
  return 'duplicate ' .. redis.call('GET', KEYS[1])
end
local which, window, opened = false, 0, false
-- A window is most often a new one, which one SET NX opens: people seldom
-- ask twice a minute, and most channels see fewer requests than that. An
-- open one (a busy channel) costs an INCR more. Written out rather than as
-- one Lua function for both: a closure made on every run cost Redis more
-- than the calls it saved.
if ARGV[4] ~= '0' then
  opened = redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[5])
  if not opened and redis.call('INCR', KEYS[2]) > tonumber(ARGV[4]) then which, window = 'user', ARGV[5] end
end
if not which and ARGV[6] ~= '0' and not redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[7]) then
  if redis.call('INCR', KEYS[3]) > tonumber(ARGV[6]) then
    which, window = 'channel', ARGV[7]
    -- Uncounted in the user's window; one this request opened goes, so
    -- that a flood from many people leaves no key per person behind.
    if opened then redis.call('DEL', KEYS[2]) elseif ARGV[4] ~= '0' then redis.call('DECR', KEYS[2]) end
  end
end
if which then
  if ARGV[2] == '1' then redis.call('DEL', KEYS[1]) end
  redis.call('DEL', KEYS[4])
  local notify = '0'
  -- Once the channel's notices are used up, a throttled request adds no
  -- key that stays: a flood costs Redis these few calls and deleting the
  -- record stored beside the script.
  if tonumber(redis.call('GET', KEYS[7]) or '0') < tonumber(ARGV[8]) and redis.call('SET', KEYS[6], '1', 'NX', 'PX', window) then
    local n = redis.call('INCR', KEYS[7])
    if n == 1 then redis.call('PEXPIRE', KEYS[7], ARGV[7]) end
    if n <= tonumber(ARGV[8]) then notify = '1' end
  end
  return 'throttled ' .. which .. ' ' .. notify
end
redis.call('XADD', KEYS[5], '*', 'request', ARGV[1])
return 'new'
`

// admitRecordKey is the index of the request record among admitScript's
// KEYS.
const admitRecordKey = 3

// Admit takes a request in, or tells why not, in one Redis round trip:
// a request whose dedupe key was seen answers the first request's id; one
// over its user's or channel's rate limit is throttled (Notify says whether
// to tell the person: once per window each, and at most ChannelNotices
// people per channel window); otherwise its record is stored and it is
// queued on the request stream.
func (s *Store) Admit(ctx context.Context, a bot.Admission) (bot.AdmitResult, error) {
	c := s.admits.call()
	rec, err := appendRecord(c.record[:0], &a.Record)
	if err != nil {
		return bot.AdmitResult{}, err
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
		return bot.AdmitResult{}, wrap("admit request", err)
	}
	outcome, detail, _ := strings.Cut(res, " ")
	switch outcome {
	case "new":
		return bot.AdmitResult{Outcome: bot.AdmitNew, RequestID: a.Record.Request.ID}, nil
	case "duplicate":
		return bot.AdmitResult{Outcome: bot.AdmitDuplicate, RequestID: bot.RequestID(detail)}, nil
	case "throttled":
		limit, notify, _ := strings.Cut(detail, " ")
		return bot.AdmitResult{Outcome: bot.AdmitThrottled, Limit: limit, Notify: notify == "1"}, nil
	}
	return bot.AdmitResult{}, fmt.Errorf("admit request: unexpected reply %q", res)
}

// admitKeys names admitScript's KEYS for a, in the order it takes them,
// all in one string: seven allocations on the ack path become one.
func (s *Store) admitKeys(c *admitCall, a bot.Admission, now time.Time) {
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
