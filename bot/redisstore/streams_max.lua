-- Records the most request stream shards any replica has used.
-- KEYS: 1 the record. ARGV: 1 this replica's shards. Returns the most.
local most = tonumber(redis.call('GET', KEYS[1]) or '0')
local mine = tonumber(ARGV[1])
if mine > most then
  redis.call('SET', KEYS[1], ARGV[1])
  return mine
end
return most
