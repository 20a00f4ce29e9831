// Package pending keeps BobNet's short-lived state in Redis: proposals
// waiting for a decision (with a TTL), the atomic claim that lets exactly one
// decision win, request records, dedupe keys, rate limits, thread history
// and the request stream.
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

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/planner"
)

// grace is how long a proposal stays readable in Redis after it expires,
// so the sweeper can still announce the expiry and a late click gets
// "expired" rather than "not found".
const grace = time.Hour

// Store is the Redis store for proposals and requests. Keys all start with
// its prefix, so several deployments (or tests) can share one Redis.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	admits *admitter
}

// NewStore returns a store on rdb with keys under prefix.
func NewStore(rdb redis.UniversalClient, prefix string) *Store {
	return &Store{rdb: rdb, prefix: prefix + ":", admits: newAdmitter(rdb)}
}

// key joins the prefix and parts with ":" in one allocation. (Intake
// names its seven keys in one string of their own: admitKeys.)
func (s *Store) key(parts ...string) string {
	n := len(s.prefix) + len(parts)
	for _, p := range parts {
		n += len(p)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(s.prefix)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(p)
	}
	return b.String()
}

// wrap marks Redis failures as bot.ErrUnavailable, so the engine can tell
// the user to try again rather than that something is wrong with the input.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w: redis: %w", op, bot.ErrUnavailable, err)
}

// Ping reports whether Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	return wrap("ping", s.rdb.Ping(ctx).Err())
}

// PutProposal stores a proposal until ttl after its expiry time and puts it
// on the expiry schedule.
func (s *Store) PutProposal(ctx context.Context, p bot.Proposal) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	ttl := keepFor(p.ExpiresAt)
	_, err = s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, s.key("proposal", string(p.ID)), b, ttl)
		if p.State == bot.ProposalPending {
			pipe.ZAdd(ctx, s.key("expiries"), redis.Z{Score: float64(p.ExpiresAt.UnixMilli()), Member: string(p.ID)})
		} else {
			pipe.ZRem(ctx, s.key("expiries"), string(p.ID))
		}
		s.scheduleReminder(ctx, pipe, p) // remind.go
		return nil
	})
	return wrap("put proposal", err)
}

// Proposal returns a stored proposal; bot.ErrNotFound when Redis has none
// (never stored, or gone after its expiry). Deciding is set on a pending
// proposal whose claim is held.
func (s *Store) Proposal(ctx context.Context, id bot.ProposalID) (bot.Proposal, error) {
	vals, err := s.rdb.MGet(ctx, s.proposalKeys(id)...).Result()
	if err != nil {
		return bot.Proposal{}, wrap("get proposal", err)
	}
	p, held, err := readProposal(id, vals)
	if err != nil {
		return bot.Proposal{}, err
	}
	p.Deciding = held != nil && p.State == bot.ProposalPending
	return p, nil
}

// proposalKeys are the keys a proposal is read from, in the order
// readProposal takes their values: the proposal, the message its preview
// was posted as, its decision and its claim.
func (s *Store) proposalKeys(id bot.ProposalID) []string {
	return []string{s.key("proposal", string(id)), s.key("preview", string(id)), s.key("decision", string(id)), s.key("claim", string(id))}
}

// readProposal builds a proposal from the values of proposalKeys, and
// returns the claim's holder (nil when none holds it) beside it.
// bot.ErrNotFound when Redis has no such proposal.
func readProposal(id bot.ProposalID, vals []any) (bot.Proposal, any, error) {
	raw, ok := vals[0].(string)
	if !ok {
		return bot.Proposal{}, nil, fmt.Errorf("proposal %s: %w", id, bot.ErrNotFound)
	}
	p, err := decodeProposal(id, raw)
	if err != nil {
		return bot.Proposal{}, nil, err
	}
	withPreview(&p, vals[1])
	if err := withDecision(&p, vals[2]); err != nil {
		return bot.Proposal{}, nil, err
	}
	return p, vals[3], nil
}

// decision is the part of a proposal its decision changes. It is written
// under its own key (PutDecision): a 64-card proposal is some 20 KB of
// JSON to encode and send again for five fields, on the path between an
// approval and its answer.
type decision struct {
	State     bot.ProposalState `json:"state"`
	DecidedBy string            `json:"decided_by,omitempty"`
	DecidedAt time.Time         `json:"decided_at,omitzero"`
	BoardID   board.ID          `json:"board_id,omitempty"`
	BoardURL  string            `json:"board_url,omitempty"`
	Reason    string            `json:"reason,omitempty"`
}

// withDecision lays a proposal's recorded decision over it.
func withDecision(p *bot.Proposal, raw any) error {
	s, ok := raw.(string)
	if !ok || s == "" {
		return nil
	}
	var d decision
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return fmt.Errorf("proposal %s: decision: %w", p.ID, err)
	}
	p.State, p.DecidedBy, p.DecidedAt, p.BoardID, p.BoardURL, p.Reason = d.State, d.DecidedBy, d.DecidedAt, d.BoardID, d.BoardURL, d.Reason
	return nil
}

// PutDecision records how a proposal was decided (its state, who, when
// and the board) and takes it off the expiry schedule. Proposal and
// ClaimProposal return the proposal with it; a decision is final, so it
// wins over the state PutProposal last wrote.
func (s *Store) PutDecision(ctx context.Context, p bot.Proposal) error {
	b, err := json.Marshal(decision{State: p.State, DecidedBy: p.DecidedBy, DecidedAt: p.DecidedAt, BoardID: p.BoardID, BoardURL: p.BoardURL, Reason: p.Reason})
	if err != nil {
		return err
	}
	ttl := keepFor(p.ExpiresAt)
	_, err = s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, s.key("decision", string(p.ID)), b, ttl)
		pipe.ZRem(ctx, s.key("expiries"), string(p.ID))
		pipe.ZRem(ctx, s.key("reminders"), string(p.ID)) // remind.go
		return nil
	})
	return wrap("put decision", err)
}

// withPreview fills in the message a proposal's preview was posted as,
// kept under its own key (see SetPreviewMessage).
func withPreview(p *bot.Proposal, ref any) {
	if s, ok := ref.(string); ok && s != "" && p.Message == "" {
		p.Message = bot.MessageRef(s)
	}
}

// SetPreviewMessage records the message a proposal's preview was posted
// as, and reports whether a redraw missed it meanwhile (PreviewMessage
// found none): then the caller redraws. It has its own key rather than
// being a field written with the proposal, because the post and a
// decision race: a decision's write, made from a copy loaded before the
// post returned, must not erase the message, and the post must not put
// back the pending state a decision just replaced. Both steps are one
// script, so exactly one side redraws.
func (s *Store) SetPreviewMessage(ctx context.Context, id bot.ProposalID, ref bot.MessageRef, expires time.Time) (missed bool, err error) {
	n, err := setPreviewScript.Run(ctx, s.rdb, []string{s.key("preview", string(id)), s.key("preview-missed", string(id))},
		string(ref), keepFor(expires).Milliseconds()).Int()
	return n == 1, wrap("set preview message", err)
}

// PreviewMessage returns the message a proposal's preview was posted as.
// When there is none yet it notes that a redraw missed it, so that
// SetPreviewMessage's caller redraws once the post returns.
func (s *Store) PreviewMessage(ctx context.Context, id bot.ProposalID, expires time.Time) (bot.MessageRef, error) {
	ref, err := previewScript.Run(ctx, s.rdb, []string{s.key("preview", string(id)), s.key("preview-missed", string(id))},
		keepFor(expires).Milliseconds()).Text()
	return bot.MessageRef(ref), wrap("get preview message", err)
}

// keepFor is how long the keys of a proposal expiring at expires live:
// until then and grace after, at least a second.
func keepFor(expires time.Time) time.Duration { return max(time.Until(expires)+grace, time.Second) }

// setPreviewScript: KEYS 1 preview, 2 missed marker; ARGV 1 message, 2 TTL
// ms. Returns 1 when a redraw missed the message.
var setPreviewScript = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('DEL', KEYS[2]) == 1 then return 1 end
return 0
`)

// previewScript: KEYS 1 preview, 2 missed marker; ARGV 1 TTL ms. Returns
// the message, or ” after marking the miss.
var previewScript = redis.NewScript(`
local m = redis.call('GET', KEYS[1])
if m then return m end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
return ''
`)

// Claim takes the proposal's decision lock for holder. Exactly one caller
// gets true until the lock is released or ttl passes; that caller alone may
// change the proposal's state.
func (s *Store) Claim(ctx context.Context, id bot.ProposalID, holder string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.key("claim", string(id)), holder, ttl).Result()
	return ok, wrap("claim proposal", err)
}

// ClaimProposal takes the proposal's decision lock for holder, like Claim,
// and returns the proposal as it is under the lock (or, when someone else
// holds it, as it is now). bot.ErrNotFound when Redis has no such proposal;
// then nothing is claimed.
//
// The lock and the read are one MULTI/EXEC, one round trip, rather than a
// Lua script: a script copies a 64-card proposal (some 20 KB) into Lua and
// back, which costs more than the round trip itself. MULTI takes the lock
// even for a proposal Redis does not have; it is given back at once.
func (s *Store) ClaimProposal(ctx context.Context, id bot.ProposalID, holder string, ttl time.Duration) (bot.Proposal, bool, error) {
	var lock *redis.BoolCmd
	var vals *redis.SliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		lock = pipe.SetNX(ctx, s.key("claim", string(id)), holder, max(ttl, time.Millisecond))
		vals = pipe.MGet(ctx, s.proposalKeys(id)...)
		return nil
	})
	if err != nil {
		return bot.Proposal{}, false, wrap("claim proposal", err)
	}
	claimed := lock.Val()
	p, held, err := readProposal(id, vals.Val())
	if err != nil {
		if claimed {
			_ = s.Release(ctx, id, holder)
		}
		return bot.Proposal{}, false, err
	}
	if !claimed {
		p.ClaimHolder, _ = held.(string)
	}
	return p, claimed, nil
}

// Release gives holder's claim back, so a decision that failed can be
// retried. A claim someone else holds (holder's own ran out and another
// took it) is left: bot.ErrNotHolder.
func (s *Store) Release(ctx context.Context, id bot.ProposalID, holder string) error {
	return s.ifHolder(ctx, releaseScript, "release proposal", id, holder)
}

// RenewClaim extends holder's claim to ttl from now, while its decision is
// still working. bot.ErrNotHolder when holder no longer holds it.
func (s *Store) RenewClaim(ctx context.Context, id bot.ProposalID, holder string, ttl time.Duration) error {
	return s.ifHolder(ctx, renewScript, "renew claim", id, holder, max(ttl, time.Millisecond).Milliseconds())
}

func (s *Store) ifHolder(ctx context.Context, script *redis.Script, op string, id bot.ProposalID, holder string, args ...any) error {
	n, err := script.Run(ctx, s.rdb, []string{s.key("claim", string(id))}, append([]any{holder}, args...)...).Int()
	if err != nil {
		return wrap(op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s %s: %w", op, id, bot.ErrNotHolder)
	}
	return nil
}

// releaseScript and renewScript compare the claim's holder and change the
// claim in one step, so neither touches a claim taken by someone else
// after the caller's ran out. KEYS 1 claim; ARGV 1 holder (renew: 2 TTL
// ms). They return 1 when the caller held it.
var (
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
	renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`)
)

// DueExpiries returns up to limit pending proposals whose expiry time has
// passed.
func (s *Store) DueExpiries(ctx context.Context, now time.Time, limit int) ([]bot.ProposalID, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.key("expiries"), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, wrap("due expiries", err)
	}
	out := make([]bot.ProposalID, len(ids))
	for i, id := range ids {
		out[i] = bot.ProposalID(id)
	}
	return out, nil
}

// RemoveExpiry takes a proposal off the expiry schedule.
func (s *Store) RemoveExpiry(ctx context.Context, id bot.ProposalID) error {
	return wrap("remove expiry", s.rdb.ZRem(ctx, s.key("expiries"), string(id)).Err())
}

// requestTTL is how long request records, dedupe keys and thread history
// are kept.
const requestTTL = 7 * 24 * time.Hour

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

// SeenOnce reports whether this is the first time key is seen within ttl;
// adapters use it for platform event ids.
func (s *Store) SeenOnce(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.key("seen", key), 1, ttl).Result()
	return ok, wrap("seen once", err)
}

// Mark sets a flag for ttl.
func (s *Store) Mark(ctx context.Context, key string, ttl time.Duration) error {
	return wrap("mark", s.rdb.Set(ctx, s.key("mark", key), 1, ttl).Err())
}

// Marked reports whether a flag is set.
func (s *Store) Marked(ctx context.Context, key string) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.key("mark", key)).Result()
	return n == 1, wrap("marked", err)
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

// Allow counts one event against limit for key in a fixed window and
// reports whether it is within the limit. Requests are limited by Admit;
// this is for everything else that must not flood (board events).
func (s *Store) Allow(ctx context.Context, key string, limit bot.RateLimit) (bool, error) {
	if limit.N <= 0 || limit.Per <= 0 {
		return true, nil
	}
	k := s.key("rate", key, window(time.Now(), limit.Per))
	var incr *redis.IntCmd
	_, err := s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		incr = pipe.Incr(ctx, k)
		pipe.PExpire(ctx, k, limit.Per)
		return nil
	})
	if err != nil {
		return false, wrap("rate limit", err)
	}
	return incr.Val() <= int64(limit.N), nil
}

// window names the fixed rate-limit window now falls in.
func window(now time.Time, per time.Duration) string {
	return strconv.FormatInt(windowIndex(now, per), 10)
}

// windowIndex numbers the fixed rate-limit window now falls in.
func windowIndex(now time.Time, per time.Duration) int64 {
	if per <= 0 {
		return 0
	}
	return now.UnixMilli() / per.Milliseconds()
}

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

// maxTurns is how many earlier messages of a thread are kept for prompts.
const maxTurns = 20

// AppendTurn adds a message to a thread's history.
func (s *Store) AppendTurn(ctx context.Context, thread string, t planner.Turn) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	k := s.key("thread", thread)
	_, err = s.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.RPush(ctx, k, b)
		pipe.LTrim(ctx, k, -maxTurns, -1)
		pipe.Expire(ctx, k, requestTTL)
		return nil
	})
	return wrap("append turn", err)
}

// Turns returns a thread's history, oldest first.
func (s *Store) Turns(ctx context.Context, thread string) ([]planner.Turn, error) {
	items, err := s.rdb.LRange(ctx, s.key("thread", thread), 0, -1).Result()
	if err != nil {
		return nil, wrap("turns", err)
	}
	out := make([]planner.Turn, 0, len(items))
	for _, it := range items {
		var t planner.Turn
		if json.Unmarshal([]byte(it), &t) == nil {
			out = append(out, t)
		}
	}
	return out, nil
}
