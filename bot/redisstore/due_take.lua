-- TakeDue: the members of a due set whose time has come, at most ARGV[2],
-- removed as they are read, so that each is taken by one caller.
-- KEYS: 1 the set. ARGV: 1 now (ms), 2 at most. Returns the members.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
if #due > 0 then redis.call('ZREM', KEYS[1], unpack(due)) end
return due
