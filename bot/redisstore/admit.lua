-- Admit: takes a request in (see admitScript in intake.go for why each
-- step is written as it is).
-- KEYS: 1 dedupe, 2 user window, 3 channel window, 4 request record,
-- 5 stream, 6 user notice, 7 channel notice count.
-- ARGV: 1 request id, 2 has dedupe (0/1), 3 dedupe TTL ms, 4 user N
-- (0: no limit), 5 user window ms, 6 channel N (0: no limit), 7 channel
-- window ms, 8 notices per channel window.
-- Returns "new", "duplicate <first request id>" or
-- "throttled <user|channel> <notify: 0|1>".
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
