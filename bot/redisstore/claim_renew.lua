-- RenewClaim: extends the claim only if the caller holds it.
-- KEYS: 1 claim. ARGV: 1 holder, 2 TTL ms. Returns 1 when the caller held
-- it, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
