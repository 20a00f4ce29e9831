-- Deletes a drained request stream once it is empty and its group has
-- nothing pending.
-- KEYS: 1 the stream. ARGV: 1 the group. Returns 1 when it deleted it.
if redis.call('XLEN', KEYS[1]) ~= 0 then return 0 end
local ok, pending = pcall(redis.call, 'XPENDING', KEYS[1], ARGV[1])
if ok and pending[1] ~= 0 then return 0 end
return redis.call('DEL', KEYS[1])
