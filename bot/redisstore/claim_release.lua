-- Release: deletes the claim only if the caller holds it.
-- KEYS: 1 claim. ARGV: 1 holder. Returns 1 when the caller held it, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
