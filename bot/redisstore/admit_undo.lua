-- Admit, step 3 (the user's slot): gives back a refused request's count in
-- its user's window, and deletes a window left at nothing, so that a flood
-- refused by its channel leaves no key per person behind.
-- KEYS: 1 the user's window. Returns the count left.
local n = redis.call('DECR', KEYS[1])
if n <= 0 then redis.call('DEL', KEYS[1]) end
return n
