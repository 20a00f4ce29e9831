-- PreviewMessage: the message a proposal's preview was posted as, or ''
-- after marking that a redraw missed it.
-- KEYS: 1 preview, 2 missed marker. ARGV: 1 TTL ms.
local m = redis.call('GET', KEYS[1])
if m then return m end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
return ''
