-- Admit (see admitter in admit.go for the steps and why their order is
-- safe): on a cluster, step 2 in the slot of the channel's stream shard;
-- on one server (single or sentinel mode, 7 keys), the whole admission.
-- The dedupe mark, the channel's rate window, the notices of throttled
-- people and the stream entry, all or nothing; on one server also the
-- user's rate window and the request record, which is its own dedupe
-- mark there (its id is derived from the dedupe key), deleted again when
-- the request is not taken.
-- KEYS: 1 dedupe, 2 channel window, 3 stream shard, 4 user notice,
-- 5 channel notice count; one server: 6 user window, 7 request record.
-- ARGV: 1 request id, 2 has dedupe (0/1; one server: 2 has it and reads
-- marks of before), 3 user over its limit (0/1, step 1's answer; 0 on
-- one server); one server: 4 the record.
-- The settings are written into the text (admitText in admitcall.go):
-- each argument costs Redis about 0.2 µs a call. Windows and TTLs in
-- ms; N 0: no limit.
local DEDUPE_TTL, CHAN_N, CHAN_PER, USER_PER = '$dedupeTTL', $chanN, '$chanPer', '$userPer'
local NOTICES, USER_N, RECORD_TTL = $notices, $userN, '$recordTTL'
-- Returns "new", "duplicate <first request id>" or
-- "throttled <user|channel> <notify: 0|1>", with " full" after a channel's
-- refusal once its notices for the window are used up (floods.go).
local one = #KEYS == 7
-- On a cluster the dedupe mark is set as it is read (SET NX GET): a
-- request taken keeps it, one refused below has it deleted again.
local marked = false
if one then
  if ARGV[2] ~= '0' then
    -- A mark of a version that kept marks apart from records (until
    -- 2026-12) answers for the request it marked, for an hour after the
    -- upgrade (InFlight.Init).
    local first = ARGV[2] == '2' and redis.call('GET', KEYS[1])
    if first then
      redis.call('PEXPIRE', KEYS[1], DEDUPE_TTL)
      return 'duplicate ' .. first
    end
    if not redis.call('SET', KEYS[7], ARGV[4], 'NX', 'PX', RECORD_TTL) then
      -- A write, as below.
      redis.call('PEXPIRE', KEYS[7], RECORD_TTL)
      return 'duplicate ' .. ARGV[1]
    end
  else
    redis.call('SET', KEYS[7], ARGV[4], 'PX', RECORD_TTL)
  end
elseif ARGV[2] == '1' then
  local first = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'GET', 'PX', DEDUPE_TTL)
  if first then
    -- A write, so that the WAIT after this script covers the first
    -- request's entry too (replication is in order): a duplicate is
    -- acknowledged only once a replica has what it duplicates.
    redis.call('PEXPIRE', KEYS[1], DEDUPE_TTL)
    return 'duplicate ' .. first
  end
  marked = true
end
local counted = false
local which, window = false, 0
if ARGV[3] == '1' then
  which, window = 'user', USER_PER
elseif one and USER_N ~= 0 then
  -- Step 1 here: a window's first request creates it at 1 with its
  -- length (one call); a later one counts (INCR). Here a window is made
  -- with its length, but one made by INCR alone (a cluster's steps, or a
  -- version before this script, losing its connection in between) gets
  -- it from its second request (PEXPIRE NX): a call a request fewer.
  if redis.call('SET', KEYS[6], '1', 'NX', 'PX', USER_PER) then
    counted = true
  else
    local n = redis.call('INCR', KEYS[6])
    if n == 2 then redis.call('PEXPIRE', KEYS[6], USER_PER, 'NX') end
    if n > USER_N then which, window = 'user', USER_PER else counted = true end
  end
end
if not which and CHAN_N ~= 0 and not redis.call('SET', KEYS[2], '1', 'NX', 'PX', CHAN_PER) then
  if redis.call('INCR', KEYS[2]) > CHAN_N then
    which, window = 'channel', CHAN_PER
    -- Step 3 here: the count given back, a window left at nothing
    -- deleted, so that a flood refused by its channel leaves no key per
    -- person behind.
    if counted and redis.call('DECR', KEYS[6]) <= 0 then redis.call('DEL', KEYS[6]) end
  end
end
if which then
  if marked then redis.call('DEL', KEYS[1]) end
  if one then redis.call('DEL', KEYS[7]) end
  local notify = '0'
  -- Once the channel's notices are used up, a throttled request adds no
  -- key that stays: a flood costs Redis these few calls.
  if tonumber(redis.call('GET', KEYS[5]) or '0') < NOTICES and redis.call('SET', KEYS[4], '1', 'NX', 'PX', window) then
    local n = redis.call('INCR', KEYS[5])
    if n == 1 then redis.call('PEXPIRE', KEYS[5], CHAN_PER) end
    if n <= NOTICES then notify = '1' end
  end
  if which == 'channel' and tonumber(redis.call('GET', KEYS[5]) or '0') >= NOTICES then
    return 'throttled channel ' .. notify .. ' full'
  end
  return 'throttled ' .. which .. ' ' .. notify
end
redis.call('XADD', KEYS[3], '*', 'request', ARGV[1])
return 'new'
