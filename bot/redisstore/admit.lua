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
-- marks of before), 3 dedupe TTL ms, 4 user over
-- its limit (0/1, step 1's answer; 0 on one server), 5 channel N (0: no
-- limit), 6 channel window ms, 7 user window ms, 8 notices per channel
-- window; one server: 9 user N (0: no limit), 10 the record, 11 its TTL
-- ms.
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
      redis.call('PEXPIRE', KEYS[1], ARGV[3])
      return 'duplicate ' .. first
    end
    if not redis.call('SET', KEYS[7], ARGV[10], 'NX', 'PX', ARGV[11]) then
      -- A write, as below.
      redis.call('PEXPIRE', KEYS[7], ARGV[11])
      return 'duplicate ' .. ARGV[1]
    end
  else
    redis.call('SET', KEYS[7], ARGV[10], 'PX', ARGV[11])
  end
elseif ARGV[2] == '1' then
  local first = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'GET', 'PX', ARGV[3])
  if first then
    -- A write, so that the WAIT after this script covers the first
    -- request's entry too (replication is in order): a duplicate is
    -- acknowledged only once a replica has what it duplicates.
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return 'duplicate ' .. first
  end
  marked = true
end
local counted = false
local which, window = false, 0
if ARGV[4] == '1' then
  which, window = 'user', ARGV[7]
elseif one and ARGV[9] ~= '0' then
  -- Step 1 here: a window's first request creates it at 1 with its
  -- length (one call); a later one counts (INCR). Here a window is made
  -- with its length, but one made by INCR alone (a cluster's steps, or a
  -- version before this script, losing its connection in between) gets
  -- it from its second request (PEXPIRE NX): a call a request fewer.
  if redis.call('SET', KEYS[6], '1', 'NX', 'PX', ARGV[7]) then
    counted = true
  else
    local n = redis.call('INCR', KEYS[6])
    if n == 2 then redis.call('PEXPIRE', KEYS[6], ARGV[7], 'NX') end
    if n > tonumber(ARGV[9]) then which, window = 'user', ARGV[7] else counted = true end
  end
end
if not which and ARGV[5] ~= '0' and not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[6]) then
  if redis.call('INCR', KEYS[2]) > tonumber(ARGV[5]) then
    which, window = 'channel', ARGV[6]
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
  if tonumber(redis.call('GET', KEYS[5]) or '0') < tonumber(ARGV[8]) and redis.call('SET', KEYS[4], '1', 'NX', 'PX', window) then
    local n = redis.call('INCR', KEYS[5])
    if n == 1 then redis.call('PEXPIRE', KEYS[5], ARGV[6]) end
    if n <= tonumber(ARGV[8]) then notify = '1' end
  end
  if which == 'channel' and tonumber(redis.call('GET', KEYS[5]) or '0') >= tonumber(ARGV[8]) then
    return 'throttled channel ' .. notify .. ' full'
  end
  return 'throttled ' .. which .. ' ' .. notify
end
redis.call('XADD', KEYS[3], '*', 'request', ARGV[1])
return 'new'
