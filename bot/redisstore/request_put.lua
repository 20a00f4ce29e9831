-- PutRequest: stores a request record, unless the stored one is answered
-- (done or failed) and the new one is not: a worker that took the request
-- again after its first worker stalled (a reclaim) may write "planning"
-- after the other answered, and a record moved back from its answer,
-- whose stream entry is acknowledged, would never be answered again.
-- KEYS: 1 the record. ARGV: 1 the record, 2 its TTL ms, 3 1 when the
-- record is answered. Returns 1 when stored, 0 when kept.
if ARGV[3] ~= '1' then
  local old = redis.call('GET', KEYS[1])
  if old then
    local ok, rec = pcall(cjson.decode, old)
    if ok and type(rec) == 'table' and type(rec.status) == 'table' and (rec.status.state == 'done' or rec.status.state == 'failed') then
      return 0
    end
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
