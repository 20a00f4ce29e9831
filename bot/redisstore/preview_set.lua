-- SetPreviewMessage: records the message a proposal's preview was posted
-- as, and reports whether a redraw missed it meanwhile.
-- KEYS: 1 preview, 2 missed marker. ARGV: 1 message, 2 TTL ms.
-- Returns 1 when a redraw missed the message, else 0.
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('DEL', KEYS[2]) == 1 then return 1 end
return 0
