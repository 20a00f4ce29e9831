-- Admit, step 1 (the user's slot): counts a request in its user's rate
-- window. See admitter in admit.go for the steps and why their order is
-- safe.
-- KEYS: 1 the user's window. ARGV: 1 requests allowed, 2 window ms.
-- Returns 'opened' (the first request of its window), 'counted' or 'over'.
-- A window is most often a new one, which one SET NX opens: people seldom
-- ask twice a minute. An open one costs an INCR more.
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[2]) then return 'opened' end
if redis.call('INCR', KEYS[1]) > tonumber(ARGV[1]) then return 'over' end
return 'counted'
