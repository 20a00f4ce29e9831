-- TakeDue: the members of a due set whose time has come, at most ARGV[2],
-- each put off by a lease as it is read (due again at ARGV[3]), so that
-- of callers at once one takes it, and it falls due again should that
-- caller die before dropping it.
-- KEYS: 1 the set. ARGV: 1 now (ms), 2 at most, 3 the lease's end (ms).
-- Returns the members.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, m in ipairs(due) do redis.call('ZADD', KEYS[1], 'XX', ARGV[3], m) end
return due
